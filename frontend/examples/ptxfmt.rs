//! `ptxfmt FILE…`: parses each PTX file and prints it back (the printer's output), or
//! the diagnostics. A small tool for checking the printer against `ptxas`.

use std::process::ExitCode;

use ptxvk_frontend::{parse, print, SourceFile};

fn main() -> ExitCode {
    let mut status = ExitCode::SUCCESS;
    for path in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                status = ExitCode::FAILURE;
                continue;
            }
        };
        match parse(&text) {
            Ok(m) => print!("{}", print(&m)),
            Err(d) => {
                eprint!("{}", SourceFile::new(path, text).render(&d.0));
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}
