//! `cfg(unoptimized)` for a build at opt-level 0: the end-to-end tests judge speed and
//! quality, so they are ignored there. The opt-level itself, since a profile may check
//! overflow or debug assertions optimised (CI's `ci` profile checks overflow).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(unoptimized)");
    println!("cargo::rerun-if-env-changed=OPT_LEVEL");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("0") {
        println!("cargo::rustc-cfg=unoptimized");
    }
}
