//! Environment-variable configuration and the on-disk pipeline cache. One test function in
//! its own binary (process), because it changes environment variables.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{open_or_skip, record_kernel, NEEDS};
use ptxvk_vk::{
    Device, DeviceSelector, Error, LaunchConfig, ENV_DEVICE, ENV_NO_DISK_CACHE, ENV_TIMEOUT_MS,
};

fn fresh_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ptxvk-vk-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Opens the default device, builds one pipeline and drops everything (saving the cache).
fn build_one_pipeline() {
    let dev = Device::open(&DeviceSelector::Default).expect("open");
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    let out = dev.alloc(64).expect("alloc");
    let param = dev.alloc(8).expect("alloc");
    dev.upload(&param, 0, &out.address().to_le_bytes()).expect("upload");
    let cfg = LaunchConfig { param_address: param.address(), ..LaunchConfig::default() };
    dev.launch(&program, &cfg).expect("launch");
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("ptxvk"))
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

#[test]
fn environment_and_disk_cache() {
    let Some(dev) = open_or_skip() else { return };
    let info = dev.info().clone();
    drop(dev);

    // PTXVK_DEVICE.
    std::env::set_var(ENV_DEVICE, info.index.to_string());
    assert_eq!(DeviceSelector::from_env(), DeviceSelector::Index(info.index));
    std::env::set_var(ENV_DEVICE, "llvmpipe");
    assert_eq!(DeviceSelector::from_env(), DeviceSelector::Name("llvmpipe".into()));
    std::env::remove_var(ENV_DEVICE);
    assert_eq!(DeviceSelector::from_env(), DeviceSelector::Default);

    // PTXVK_TIMEOUT_MS.
    std::env::set_var(ENV_TIMEOUT_MS, "2500");
    let dev = Device::open(&DeviceSelector::Default).expect("open with a timeout");
    assert_eq!(dev.timeout(), Duration::from_millis(2500));
    drop(dev);
    for bad in ["soon", "0", "-5", "1.5"] {
        std::env::set_var(ENV_TIMEOUT_MS, bad);
        match Device::open(&DeviceSelector::Default) {
            Err(Error::Env { var, value, .. }) => {
                assert_eq!(var, ENV_TIMEOUT_MS);
                assert_eq!(value, bad);
            }
            other => panic!("expected an Env error for {bad:?}, got {other:?}"),
        }
    }
    std::env::set_var(ENV_TIMEOUT_MS, " ");
    assert_eq!(
        Device::open(&DeviceSelector::Default).expect("open").timeout(),
        Duration::from_millis(ptxvk_vk::DEFAULT_TIMEOUT_MS),
        "an empty value means the default"
    );
    std::env::remove_var(ENV_TIMEOUT_MS);
    assert_eq!(
        Device::open(&DeviceSelector::Default).expect("open").timeout(),
        Duration::from_millis(ptxvk_vk::DEFAULT_TIMEOUT_MS)
    );

    // The disk cache is written on drop, named after the device, and read back.
    let dir = fresh_dir("cache");
    std::env::set_var("XDG_CACHE_HOME", &dir);
    std::env::remove_var(ENV_NO_DISK_CACHE);
    build_one_pipeline();
    let files = cache_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    assert!(
        name.starts_with(&format!("pipelines-{:08x}-{:08x}-", info.vendor_id, info.device_id)),
        "{name}"
    );
    let data = std::fs::read(&files[0]).expect("read cache file");
    assert!(data.len() >= 32, "cache file of {} bytes", data.len());
    assert_eq!(&data[4..8], &1u32.to_le_bytes(), "VK_PIPELINE_CACHE_HEADER_VERSION_ONE");
    assert_eq!(&data[8..12], &info.vendor_id.to_le_bytes());
    // Loading it back works, as does a corrupt file (ignored).
    build_one_pipeline();
    std::fs::write(&files[0], b"not a pipeline cache").expect("corrupt the cache");
    build_one_pipeline();
    assert_eq!(cache_files(&dir).len(), 1, "temporary files left behind");
    let _ = std::fs::remove_dir_all(&dir);

    // PTXVK_NO_DISK_CACHE=1 neither reads nor writes.
    let dir = fresh_dir("nocache");
    std::env::set_var("XDG_CACHE_HOME", &dir);
    std::env::set_var(ENV_NO_DISK_CACHE, "1");
    build_one_pipeline();
    assert!(cache_files(&dir).is_empty());
    // (The driver may keep its own cache there; ptxvk's folder must not exist.)
    assert!(!dir.join("ptxvk").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
