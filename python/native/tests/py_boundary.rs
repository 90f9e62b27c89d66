//! Every call from Python into Rust runs behind the bindings' one panic boundary: this test
//! reads the sources of `src/py/` and fails on a `#[pyfunction]`, or a method, getter or
//! constructor of a `#[pymethods]` block, whose body is anything but one call of
//! `boundary(…)`, and on attributes that would let Python reach Rust without a body of ours
//! (`#[pyo3(get)]`, `#[pyo3(set)]`, `get_all`, `set_all`). It runs without the `python`
//! feature: it needs the sources, not pyo3.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The `.rs` files under `dir`, recursively, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// True when an attribute list holds `#[NAME]` or `#[NAME(…)]` (by the path's last segment).
fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs
        .iter()
        .any(|a| a.path().segments.last().is_some_and(|s| s.ident == name))
}

/// True when `block` is exactly one expression, a call of `boundary`.
fn is_boundary_call(block: &syn::Block) -> bool {
    let [syn::Stmt::Expr(syn::Expr::Call(call), None)] = block.stmts.as_slice() else {
        return false;
    };
    matches!(&*call.func, syn::Expr::Path(p)
        if p.path.segments.last().is_some_and(|s| s.ident == "boundary"))
}

/// The entry points of one file and those that are not behind the boundary.
#[derive(Default)]
struct Check {
    file: String,
    entries: usize,
    offenders: Vec<String>,
}

impl Check {
    fn entry(&mut self, what: &str, name: &syn::Ident, block: &syn::Block) {
        self.entries += 1;
        if !is_boundary_call(block) {
            self.offenders.push(format!(
                "{}: {what} `{name}` is not one call of `boundary(…)`",
                self.file
            ));
        }
    }
}

impl<'ast> Visit<'ast> for Check {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if has_attr(&f.attrs, "pyfunction") {
            self.entry("#[pyfunction]", &f.sig.ident, &f.block);
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if has_attr(&i.attrs, "pymethods") {
            for item in &i.items {
                if let syn::ImplItem::Fn(m) = item {
                    self.entry("#[pymethods] fn", &m.sig.ident, &m.block);
                }
            }
        }
        syn::visit::visit_item_impl(self, i);
    }
}

#[test]
fn every_call_from_python_runs_behind_the_panic_boundary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (mut entries, mut offenders) = (0, Vec::new());
    for path in sources(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.strip_prefix(&root).unwrap().display().to_string();
        for bypass in ["pyo3(get", "pyo3(set", "get_all", "set_all"] {
            if text.contains(bypass) {
                offenders.push(format!(
                    "{file}: `{bypass}` reaches Rust without a boundary"
                ));
            }
        }
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut check = Check {
            file,
            ..Check::default()
        };
        check.visit_file(&ast);
        entries += check.entries;
        offenders.extend(check.offenders);
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
    // The bindings have dozens of entry points: finding none means the check reads nothing.
    assert!(entries > 30, "only {entries} entry points found under src/");
}

#[test]
fn the_check_sees_a_body_that_bypasses_the_boundary() {
    let ast: syn::File = syn::parse_str(
        "#[pyfunction] fn ok() -> PyResult<()> { boundary(|| Ok(())) }
         #[pyfunction] fn bad() -> PyResult<()> { let x = 1; boundary(|| Ok(())) }
         #[pymethods] impl A { #[getter] fn g(&self) -> u32 { 1 } fn m(&self) -> PyResult<()> { boundary(|| Ok(())) } }
         impl B { fn helper(&self) -> u32 { 1 } }",
    )
    .unwrap();
    let mut check = Check::default();
    check.visit_file(&ast);
    assert_eq!(check.entries, 4);
    let names: Vec<_> = check
        .offenders
        .iter()
        .map(|o| o.split('`').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(names, ["bad", "g"]);
}
