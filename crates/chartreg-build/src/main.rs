//! The chartreg-build binary: the library's command line.

fn main() -> std::process::ExitCode {
    chartreg_build::cli::main(std::env::args_os())
}
