//! GPU coprocessor functions (`backline-gpu`) as responders: `gpu:echo`, `gpu:steane`,
//! `gpu:bposd:CODE[:SETTINGS]` (X checks on decoder id `base`, Z checks on `base + 1`, one
//! kernel), `gpu:FILE:FUNCTION` (a user device function in a `.cu`/HIP file) and
//! `gpu:triton:FILE` (a decoder written in Triton, compiled ahead by `backline.triton_decoder`).
//!
//! Each spec launches one persistent kernel. A CPU thread that serves a message through one of
//! these responders hands it to the kernel and waits for the reply (the proxy hop, timed and
//! reported at shutdown); a controller in the same process instead attaches to the kernel's
//! rings directly, through [`Responder::ring_server`].

use std::path::PathBuf;
use std::sync::Arc;

use backline_gpu::{GpuCoprocessor, GpuFunction, GpuOptions};
use backline_ring::{RingServer, WaitPolicy};
use backline_wire::{DecoderId, Status};

use crate::{Responder, ResponderError};

/// Why a `gpu:` spec was refused.
#[derive(Debug, thiserror::Error)]
pub enum GpuSpecError {
    /// Malformed spec.
    #[error("gpu spec `{spec}`: {msg}")]
    Spec {
        /// The spec.
        spec: String,
        /// What is wrong.
        msg: String,
    },
    /// The GPU runtime refused (no GPU, a compile error, a setting the kernel lacks…).
    #[error("gpu spec `{spec}`: {error}")]
    Gpu {
        /// The spec.
        spec: String,
        /// The cause (shown in the message, so not a `source`).
        error: backline_gpu::Error,
    },
    /// The BP+OSD part of the spec was refused.
    #[error(transparent)]
    BpOsd(#[from] crate::BpOsdSpecError),
}

/// One decoder id of a GPU coprocessor.
pub struct GpuResponder {
    name: String,
    gpu: Arc<GpuCoprocessor>,
    decoder_id: DecoderId,
    wait: WaitPolicy,
}

impl GpuResponder {
    /// The coprocessor behind it.
    pub fn coprocessor(&self) -> &Arc<GpuCoprocessor> {
        &self.gpu
    }
}

impl Responder for GpuResponder {
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        match self.gpu.call(self.decoder_id, input, out, &self.wait) {
            Ok((Status::Ok, n)) => Ok(n),
            Ok((Status::BadLength, _)) => Err(ResponderError::BadLength {
                got: input.len(),
                expected: "what the GPU function accepts",
            }),
            Ok((Status::UnknownDecoder, _)) => Err(ResponderError::Failed(
                "the GPU kernel does not serve this decoder id",
            )),
            Ok((_, _)) => Err(ResponderError::Failed("the GPU function failed")),
            Err(backline_gpu::Error::Timeout(_)) => Err(ResponderError::Failed(
                "the GPU kernel did not answer in time",
            )),
            Err(_) => Err(ResponderError::Failed("the GPU kernel is not running")),
        }
    }

    fn ring_server(&self) -> Option<Arc<dyn RingServer>> {
        Some(self.gpu.clone())
    }

    fn report(&self) -> Option<String> {
        // Reported once per coprocessor, by its lowest decoder id.
        if self.gpu.functions().first().map(|f| f.0) != Some(self.decoder_id) {
            return None;
        }
        let (served, failed) = self.gpu.served();
        let hop = match self.gpu.proxy_latency() {
            Some((calls, median, p99)) => format!(
                "; proxy hop (request written → reply seen) over {calls} calls: median {:.2} µs, p99 {:.2} µs",
                median.as_secs_f64() * 1e6,
                p99.as_secs_f64() * 1e6
            ),
            None => String::new(),
        };
        Some(format!(
            "{} on {}: {served} requests served, {failed} with an error status{hop}",
            self.gpu.name(),
            self.gpu.device()
        ))
    }
}

/// The functions of a `gpu:` spec from decoder id `base`, on a kernel launched with `options`.
pub fn gpu_functions(
    spec: &str,
    base: DecoderId,
    options: &GpuOptions,
) -> Result<crate::Functions, GpuSpecError> {
    let rest = spec
        .strip_prefix("gpu:")
        .ok_or_else(|| GpuSpecError::Spec {
            spec: backline_decoders::io::excerpt(spec),
            msg: "expected gpu:echo, gpu:steane, gpu:bposd:CODE[:SETTINGS], gpu:FILE:FUNCTION or gpu:triton:FILE"
                .into(),
        })?;
    let functions: Vec<(DecoderId, GpuFunction)> = match rest {
        "echo" => vec![(base, GpuFunction::Echo)],
        "steane" => vec![(base, GpuFunction::Steane)],
        r if r.starts_with("triton:") => vec![(
            base,
            GpuFunction::Triton {
                path: PathBuf::from(&r["triton:".len()..]),
            },
        )],
        r if r.starts_with("bposd:") => {
            let (code, config) = crate::bposd::bposd_code(spec)?;
            // The CPU decoder validates the code and the settings, with its messages.
            backline_decoders::CssDecoder::from_code(&code, &config).map_err(|e| {
                crate::BpOsdSpecError::Build {
                    spec: backline_decoders::io::excerpt(spec),
                    msg: e.to_string(),
                }
            })?;
            vec![
                (
                    base,
                    GpuFunction::BpOsd {
                        checks: code.hx.clone(),
                        config: config.clone(),
                    },
                ),
                (
                    base + 1,
                    GpuFunction::BpOsd {
                        checks: code.hz,
                        config,
                    },
                ),
            ]
        }
        r => match r.rsplit_once(':') {
            Some((file, function)) if !file.is_empty() && !function.is_empty() => {
                vec![(
                    base,
                    GpuFunction::User {
                        path: PathBuf::from(file),
                        function: function.to_string(),
                    },
                )]
            }
            _ => {
                return Err(GpuSpecError::Spec {
                    spec: backline_decoders::io::excerpt(spec),
                    msg: "expected gpu:echo, gpu:steane, gpu:bposd:CODE[:SETTINGS], \
                          gpu:FILE:FUNCTION or gpu:triton:FILE"
                        .into(),
                });
            }
        },
    };
    let names: Vec<(DecoderId, String)> = functions
        .iter()
        .map(|(id, f)| {
            let what = match f {
                GpuFunction::BpOsd { .. } if *id == base => format!("{spec} (X checks)"),
                GpuFunction::BpOsd { .. } => format!("{spec} (Z checks)"),
                _ => spec.to_string(),
            };
            (*id, what)
        })
        .collect();
    let gpu = Arc::new(
        GpuCoprocessor::launch(spec, options.clone(), functions).map_err(|error| {
            GpuSpecError::Gpu {
                spec: backline_decoders::io::excerpt(spec),
                error,
            }
        })?,
    );
    Ok(names
        .into_iter()
        .map(|(id, name)| {
            let r: Arc<dyn Responder> = Arc::new(GpuResponder {
                name,
                gpu: gpu.clone(),
                decoder_id: id,
                wait: WaitPolicy::default(),
            });
            (id, r)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use backline_gpu::Backend;

    fn emu() -> GpuOptions {
        GpuOptions {
            backend: Backend::Emu,
            ..GpuOptions::default()
        }
    }

    #[test]
    fn specs_launch_kernels_that_answer_like_the_cpu_functions() {
        let f = gpu_functions("gpu:steane", 3, &emu()).unwrap();
        assert_eq!(f.len(), 1);
        let mut out = [0u8; 48];
        assert_eq!(f[0].0, 3);
        assert_eq!(f[0].1.respond(&[0b110], &mut out), Ok(1));
        assert_eq!(out[0], backline_decoders::steane::decode(0b110));
        assert!(f[0].1.ring_server().is_some());
        assert!(f[0].1.report().unwrap().contains("1 requests served"));

        let f = gpu_functions("gpu:bposd:hgp13:max_iter=10", 4, &emu()).unwrap();
        assert_eq!(f.iter().map(|x| x.0).collect::<Vec<_>>(), [4, 5]);
        assert!(f[1].1.name().contains("Z checks"));
        // Both halves are one kernel.
        assert!(Arc::ptr_eq(
            &f[0].1.ring_server().unwrap(),
            &f[1].1.ring_server().unwrap()
        ));
        assert_eq!(crate::spec_width("gpu:bposd:hgp13"), 2);
        assert_eq!(crate::spec_width("gpu:echo"), 1);
    }

    #[test]
    fn bad_specs_say_why() {
        for (spec, needle) in [
            ("gpu:", "expected gpu:echo"),
            ("gpu:warp", "expected gpu:echo"),
            ("gpu:bposd:nosuchcode", "bposd:nosuchcode"),
            ("gpu:bposd:hgp13:schedule=serial", "parallel"),
            ("gpu:/nonexistent/dec.cu:f", "/nonexistent/dec.cu"),
            ("gpu:x.cu:not-an-identifier", "identifier"),
            ("gpu:triton:/nonexistent/dec.ptx", "/nonexistent/dec.ptx"),
        ] {
            let e = gpu_functions(spec, 0, &emu()).err().unwrap().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        let e = gpu_functions("gpu:echo", 0, &GpuOptions::default());
        if let Err(e) = e {
            assert!(e.to_string().contains("no GPU"), "{e}");
        }
    }
}
