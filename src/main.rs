//! The sbx binary: parse, run, exit. All logic lives in the library.

fn main() {
    std::process::exit(sbx::main_impl());
}
