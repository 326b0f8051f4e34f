//! Fault drills for `make faults`. Each executable in `src/bin` drives the real, built
//! binaries from outside and prints what it measured; a non-zero exit means a drill failed.

pub mod load;
pub mod report;
pub mod stack;
