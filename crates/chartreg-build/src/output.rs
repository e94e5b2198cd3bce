//! Every line the tool prints, escaped on its way out: what it prints quotes upstream text
//! (chart names, Helm's messages, paths inside archives, registries' answers), so a control
//! or bidirectional formatting character is written out (`\u{1b}`), never sent to the
//! terminal. Result lines go through [`print_line`] (stdout), notes through [`eprint_line`],
//! warnings through [`warn`] (stderr); every command prints through these, and the command line
//! ([`crate::cli`]) its error. (`images --json` escapes in JSON's own way.)

use std::fmt::Display;

use chartreg_core::shown::escaped;

/// `line` on stdout, escaped.
pub fn print_line(line: impl Display) {
    println!("{}", escaped(&line.to_string()));
}

/// `line` on stderr, escaped.
pub fn eprint_line(line: impl Display) {
    eprintln!("{}", escaped(&line.to_string()));
}

/// `chartreg-build: warning: WARNING` on stderr, escaped.
pub fn warn(warning: impl Display) {
    eprint_line(format_args!("chartreg-build: warning: {warning}"));
}
