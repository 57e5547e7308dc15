//! The migrations are embedded by sqlx::migrate!: a new one must rebuild the crate (sqlx's advice).
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../migrations");
}
