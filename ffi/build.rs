//! Gives the shared library the SONAME of its ABI major version, so programs linked with
//! `-lspot_timer` record `libspot_timer.so.2` and keep working across compatible (minor)
//! updates, and an incompatible major can be installed beside it. Keep the number equal to
//! the major of `SPOT_ABI_VERSION` (ffi/src/types.rs).

const ABI_MAJOR: u32 = 2;

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libspot_timer.so.{ABI_MAJOR}");
    }
    // For the test that keeps this number and SPOT_ABI_VERSION's major equal.
    println!("cargo:rustc-env=SPOT_SONAME_MAJOR={ABI_MAJOR}");
    println!("cargo:rerun-if-changed=build.rs");
}
