//! Memory shared as opaque fds (`Device::alloc_exportable`, `Buffer::export_fd`,
//! `Device::import_memory`): two devices of one process stand in for two processes
//! (`cuda-driver/tests/ipc.rs` covers separate processes).

mod common;

use common::open_or_skip;
use ptxvk_vk::{Device, DeviceSelector, Error};

#[test]
fn exported_memory_imports_into_another_device_and_shares_bytes() {
    let Some(exporter) = open_or_skip() else { return };
    if !exporter.can_export_memory() {
        eprintln!("SKIPPED: {} cannot export memory as opaque fds", exporter.info().name);
        return;
    }
    let importer = Device::open(&DeviceSelector::Default).expect("second device");
    let size = 3 * 4096 + 12;
    let buffer = exporter.alloc_exportable(size).expect("exportable allocation");
    assert_eq!(exporter.download(&buffer, 0, size).expect("download"), vec![0; size as usize]);
    let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    exporter.upload(&buffer, 0, &data).expect("upload");

    let (fd, exported) = buffer.export_fd().expect("export");
    assert_eq!(exported.size, size);
    assert!(exported.allocation_size >= size);
    let imported = importer.import_memory(fd, &exported).expect("import");
    assert_eq!(imported.size(), size);
    assert_eq!(importer.download(&imported, 0, size).expect("download"), data);

    // Writes through the import show in the exporter's buffer: one memory object.
    importer.upload(&imported, 5, b"shared").expect("upload through the import");
    assert_eq!(exporter.download(&buffer, 5, 6).expect("download"), b"shared");
    // The import stays valid after the exporter frees its buffer.
    drop(buffer);
    assert_eq!(importer.download(&imported, 5, 6).expect("download"), b"shared");
}

#[test]
fn ordinary_buffers_and_foreign_devices_are_refused() {
    let Some(device) = open_or_skip() else { return };
    if !device.can_export_memory() {
        return;
    }
    let plain = device.alloc(64).expect("alloc");
    assert!(matches!(plain.export_fd(), Err(Error::InvalidUse(_))));
    let buffer = device.alloc_exportable(64).expect("exportable allocation");
    let (fd, mut exported) = buffer.export_fd().expect("export");
    exported.device_uuid[0] ^= 0xff;
    assert!(matches!(device.import_memory(fd, &exported), Err(Error::InvalidUse(_))));
}
