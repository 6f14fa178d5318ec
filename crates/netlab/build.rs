//! `cfg(unoptimized)` for a build at opt-level 0: the end-to-end tests judge speed and
//! quality, so they are ignored there (debug assertions are no sign: CI's optimised `ci`
//! profile has them on).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(unoptimized)");
    println!("cargo::rerun-if-env-changed=OPT_LEVEL");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("0") {
        println!("cargo::rustc-cfg=unoptimized");
    }
}
