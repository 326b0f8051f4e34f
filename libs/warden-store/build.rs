// Embedded migrations: rebuild when a migration is added, not only when one changes.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
