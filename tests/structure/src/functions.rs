//! Long functions: none longer than [`LIMIT`] lines, from `fn` to its closing brace, but
//! for the exceptions of [`EXCEPTIONS`], each held to its own ceiling.

use std::path::Path;

use syn::visit::Visit;

use crate::Error;

/// The most lines a function may span.
pub const LIMIT: usize = 150;

/// Functions allowed past [`LIMIT`], with the most lines each may span and why. rust-hdl's
/// `#[hdl_gen]` turns one `update` body into one Verilog `always` block: it cannot call helper
/// functions, so a block's logic can only be split into sub-blocks of its own.
pub const EXCEPTIONS: &[(&str, &str, usize, &str)] = &[
    (
        "hdl/src/fsm.rs",
        "HwhsFsm::update",
        286,
        "the FSM's states and their commits: one always block (436 lines before the WQE \
         poster, request buffer and reply memory became blocks of their own)",
    ),
    (
        "hdl/src/top.rs",
        "Hwhs::update",
        278,
        "the register file's bus side and the wiring of the engine's blocks (485 lines before \
         the configuration registers became one array decoded by a loop)",
    ),
];

/// A function longer than allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Long {
    /// Its name (`Type::name` for a method).
    pub name: String,
    /// The line of its `fn`.
    pub line: usize,
    /// The lines it spans.
    pub lines: usize,
}

struct Finder {
    owner: Vec<String>,
    found: Vec<Long>,
}

impl Finder {
    fn function(&mut self, name: &syn::Ident, fn_token: &syn::Token![fn], block: &syn::Block) {
        let start = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match self.owner.last() {
            Some(o) => format!("{o}::{name}"),
            None => name.to_string(),
        };
        self.found.push(Long {
            name,
            line: start,
            lines: end + 1 - start,
        });
    }
}

impl<'a> Visit<'a> for Finder {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        self.function(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        self.function(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.function(&f.sig.ident, &f.sig.fn_token, b);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        let owner = match &*i.self_ty {
            syn::Type::Path(p) => p
                .path
                .segments
                .last()
                .map_or_else(String::new, |s| s.ident.to_string()),
            _ => String::new(),
        };
        self.owner.push(owner);
        syn::visit::visit_item_impl(self, i);
        self.owner.pop();
    }
}

/// Every function of a Rust source file with the lines it spans, in source order.
pub fn functions_of(source: &str, path: &Path) -> Result<Vec<Long>, Error> {
    let file = syn::parse_file(source).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        message: format!("{e} at line {}", e.span().start().line),
    })?;
    let mut f = Finder {
        owner: Vec::new(),
        found: Vec::new(),
    };
    f.visit_file(&file);
    Ok(f.found)
}

/// The functions of `source` (the file `path`, relative to the workspace root) over their
/// limit: [`LIMIT`], or an exception's own ceiling.
pub fn too_long(source: &str, path: &Path) -> Result<Vec<Long>, Error> {
    let rel = path.to_string_lossy().replace('\\', "/");
    Ok(functions_of(source, path)?
        .into_iter()
        .filter(|f| {
            let ceiling = EXCEPTIONS
                .iter()
                .find(|(file, name, _, _)| *file == rel && *name == f.name)
                .map_or(LIMIT, |e| e.2);
            f.lines > ceiling
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(n: usize) -> String {
        (0..n).map(|i| format!("    let _x{i} = {i};\n")).collect()
    }

    #[test]
    fn counts_lines_from_fn_to_the_closing_brace() {
        let src = format!(
            "/// doc\nfn short() {{\n}}\n\nstruct S;\nimpl S {{\n    fn long(&self) {{\n{}    }}\n}}\n",
            body(10)
        );
        let f = functions_of(&src, Path::new("x.rs")).unwrap();
        assert_eq!(
            f[0],
            Long {
                name: "short".into(),
                line: 2,
                lines: 2
            }
        );
        assert_eq!(
            f[1],
            Long {
                name: "S::long".into(),
                line: 7,
                lines: 12
            }
        );
    }

    #[test]
    fn a_seeded_long_function_is_reported() {
        let ok = format!("fn f() {{\n{}}}\n", body(LIMIT - 2));
        assert_eq!(too_long(&ok, Path::new("x.rs")).unwrap(), vec![]);
        let long = format!("fn f() {{\n{}}}\n", body(LIMIT - 1));
        let v = too_long(&long, Path::new("x.rs")).unwrap();
        assert_eq!(
            v,
            vec![Long {
                name: "f".into(),
                line: 1,
                lines: LIMIT + 1
            }]
        );
    }

    #[test]
    fn nested_functions_and_trait_defaults_count() {
        let src = format!(
            "trait T {{\n    fn d() {{\n{}    }}\n}}\nfn outer() {{\n    fn inner() {{}}\n}}\n",
            body(3)
        );
        let names: Vec<String> = functions_of(&src, Path::new("x.rs"))
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["d", "outer", "inner"]);
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_naming_it() {
        let e = functions_of("fn (", Path::new("bad.rs"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("parsing bad.rs:"), "{e}");
    }
}
