//! `cuGetProcAddress`: clients look up only this by name and resolve everything else
//! through it, by base name, the CUDA version they were built for and the per-thread
//! default-stream flag. `proc_table.rs` (generated from measured client requests) maps
//! those to the versioned export; [`export`] maps an export to its address when this
//! library implements it. What it does not implement is `CUDA_ERROR_NOT_FOUND`, never a
//! crash.

use std::ffi::{c_char, c_int, c_void};

use cudarc::driver::sys::CUresult;

use crate::proc_table::PROC_TABLE;
use crate::{c_str, entry, out};

const CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: u64 = 2;
const SYMBOL_FOUND: c_int = 0;
const SYMBOL_NOT_FOUND: c_int = 1;
const VERSION_NOT_SUFFICIENT: c_int = 2;

/// Versioned exports newer than the measured clients (CUDA 12.9) whose signature changed,
/// from CUDA 13's `cudaTypedefs.h` (`PFN_<symbol>_v<version>`): a CUDA 13 client asking
/// for these must get the new form, never the 12.x one with different arguments. (All are
/// implemented.)
const CUDA_13_TABLE: &[(&str, u32, bool, &str)] = &[
    ("cuCtxGetDevice", 13000, false, "cuCtxGetDevice_v2"),
    ("cuCtxSynchronize", 13000, false, "cuCtxSynchronize_v2"),
    ("cuLaunchHostFunc", 13010, false, "cuLaunchHostFunc_v2"),
    ("cuLaunchHostFunc", 13010, true, "cuLaunchHostFunc_v2_ptsz"),
    ("cuMemcpy3DBatchAsync", 13000, false, "cuMemcpy3DBatchAsync_v2"),
    ("cuMemcpy3DBatchAsync", 13000, true, "cuMemcpy3DBatchAsync_v2_ptsz"),
    ("cuMemcpyBatchAsync", 13000, false, "cuMemcpyBatchAsync_v2"),
    ("cuMemcpyBatchAsync", 13000, true, "cuMemcpyBatchAsync_v2_ptsz"),
    // Changed in CUDA 13.4 and not implemented: a client asking at 13.4 or later gets
    // NOT_FOUND rather than the older form with other arguments.
    ("cuGraphAddNode", 13040, false, "cuGraphAddNode_v3"),
    ("cuGraphNodeSetParams", 13040, false, "cuGraphNodeSetParams_v2"),
];

/// Every known `(symbol, version, per-thread, export)`.
fn table() -> impl Iterator<Item = &'static (&'static str, u32, bool, &'static str)> {
    PROC_TABLE.iter().chain(CUDA_13_TABLE)
}

/// The versioned export for `symbol` at `version`: the newest variant introduced at or
/// before it, the per-thread one when asked for and present.
pub(crate) fn resolve(symbol: &str, version: u32, per_thread: bool) -> Option<&'static str> {
    let pick = |ptds: bool| {
        table()
            .filter(|(s, v, p, _)| *s == symbol && *p == ptds && *v <= version)
            .max_by_key(|(_, v, _, _)| *v)
            .map(|(_, _, _, export)| *export)
    };
    if per_thread {
        pick(true).or_else(|| pick(false))
    } else {
        pick(false)
    }
}

/// Whether `symbol` exists in a later version only.
fn needs_newer(symbol: &str, version: u32) -> bool {
    table().any(|(s, v, _, _)| *s == symbol && *v > version)
}

macro_rules! exports {
    ($($name:ident),* $(,)?) => {
        /// The address of export `name` if this library implements it.
        pub(crate) fn export(name: &str) -> Option<*const c_void> {
            match name {
                $(stringify!($name) => Some($name as *const c_void),)*
                "cuGetProcAddress" => Some(cuGetProcAddress as *const c_void),
                "cuGetProcAddress_v2" => Some(cuGetProcAddress_v2 as *const c_void),
                _ => None,
            }
        }

        /// Every export listed for `cuGetProcAddress`.
        #[cfg(test)]
        pub(crate) const EXPORTS: &[&str] = &[$(stringify!($name)),*];
    };
}

use crate::device::*;
use crate::graph::*;
use crate::ipc::*;
use crate::launch::*;
use crate::memory::*;
use crate::module::*;
use crate::stream::*;
use crate::tensor_map::*;
use crate::texture::*;
use crate::{
    cuDriverGetVersion, cuGetErrorName, cuGetErrorString, cuGetExportTable, cuInit,
    cuProfilerStart, cuProfilerStop,
};

exports!(
    cuInit,
    cuProfilerStart,
    cuProfilerStop,
    cuDriverGetVersion,
    cuGetErrorName,
    cuGetErrorString,
    cuGetExportTable,
    cuDeviceGetCount,
    cuDeviceGet,
    cuDeviceGetName,
    cuDeviceGetPCIBusId,
    cuDeviceTotalMem_v2,
    cuDeviceGetUuid,
    cuDeviceGetUuid_v2,
    cuDeviceComputeCapability,
    cuDeviceGetAttribute,
    cuDevicePrimaryCtxRetain,
    cuDevicePrimaryCtxRelease_v2,
    cuDevicePrimaryCtxSetFlags_v2,
    cuDevicePrimaryCtxGetState,
    cuDevicePrimaryCtxReset_v2,
    cuCtxCreate_v2,
    cuCtxCreate_v3,
    cuCtxCreate_v4,
    cuCtxDestroy_v2,
    cuCtxGetCurrent,
    cuCtxSetCurrent,
    cuCtxPushCurrent_v2,
    cuCtxPopCurrent_v2,
    cuCtxGetDevice,
    cuCtxGetId,
    cuCtxGetCacheConfig,
    cuCtxGetLimit,
    cuCtxSetLimit,
    cuCtxSetCacheConfig,
    cuCtxGetFlags,
    cuCtxGetApiVersion,
    cuCtxSynchronize,
    cuCtxGetStreamPriorityRange,
    cuCtxGetDevice_v2,
    cuCtxSynchronize_v2,
    cuDeviceCanAccessPeer,
    cuDeviceGetP2PAttribute,
    cuCtxEnablePeerAccess,
    cuCtxDisablePeerAccess,
    cuMemcpyPeer,
    cuMemcpyPeer_ptds,
    cuMemcpyPeerAsync,
    cuMemcpyPeerAsync_ptsz,
    cuMemcpy3DPeer,
    cuMemcpy3DPeer_ptds,
    cuMemcpy3DPeerAsync,
    cuMemcpy3DPeerAsync_ptsz,
    cuMemcpyBatchAsync,
    cuMemcpyBatchAsync_ptsz,
    cuMemcpyBatchAsync_v2,
    cuMemcpyBatchAsync_v2_ptsz,
    cuMemcpy3DBatchAsync,
    cuMemcpy3DBatchAsync_ptsz,
    cuMemcpy3DBatchAsync_v2,
    cuMemcpy3DBatchAsync_v2_ptsz,
    cuMemAlloc_v2,
    cuMemAllocPitch_v2,
    cuMemFree_v2,
    cuMemGetInfo_v2,
    cuMemGetAddressRange_v2,
    cuMemAllocHost_v2,
    cuMemHostAlloc,
    cuMemFreeHost,
    cuMemHostGetDevicePointer_v2,
    cuMemHostGetFlags,
    cuMemHostRegister_v2,
    cuMemHostUnregister,
    cuMemAllocManaged,
    cuMemcpyHtoD_v2,
    cuMemcpyDtoH_v2,
    cuMemcpyDtoD_v2,
    cuMemcpyHtoD_v2_ptds,
    cuMemcpyDtoH_v2_ptds,
    cuMemcpyDtoD_v2_ptds,
    cuMemcpyHtoDAsync_v2,
    cuMemcpyDtoHAsync_v2,
    cuMemcpyDtoDAsync_v2,
    cuMemcpyHtoDAsync_v2_ptsz,
    cuMemcpyDtoHAsync_v2_ptsz,
    cuMemcpyDtoDAsync_v2_ptsz,
    cuMemcpy,
    cuMemcpy_ptds,
    cuMemcpyAsync,
    cuMemcpyAsync_ptsz,
    cuMemsetD8_v2,
    cuMemsetD16_v2,
    cuMemsetD32_v2,
    cuMemsetD8Async,
    cuMemsetD16Async,
    cuMemsetD32Async,
    cuMemsetD8_v2_ptds,
    cuMemsetD16_v2_ptds,
    cuMemsetD32_v2_ptds,
    cuMemsetD8Async_ptsz,
    cuMemsetD16Async_ptsz,
    cuMemsetD32Async_ptsz,
    cuPointerGetAttribute,
    cuPointerGetAttributes,
    cuMemcpy2D_v2,
    cuMemcpy2DUnaligned_v2,
    cuMemcpy2DUnaligned_v2_ptds,
    cuMemcpy2DAsync_v2,
    cuMemcpy2DAsync_v2_ptsz,
    cuMemcpy3D_v2,
    cuStreamWriteValue32,
    cuStreamWriteValue32_v2,
    cuStreamWriteValue32_ptsz,
    cuMemcpy3D_v2_ptds,
    cuMemcpy3DAsync_v2,
    cuMemcpy3DAsync_v2_ptsz,
    cuMemsetD2D8_v2,
    cuMemsetD2D16_v2,
    cuMemsetD2D32_v2,
    cuMemsetD2D8Async,
    cuMemsetD2D16Async,
    cuMemsetD2D32Async,
    cuMemsetD2D8_v2_ptds,
    cuMemsetD2D8Async_ptsz,
    cuMemAdvise,
    cuMemAdvise_v2,
    cuMemPrefetchAsync,
    cuMemPrefetchAsync_ptsz,
    cuMemPrefetchAsync_v2,
    cuMemPrefetchAsync_v2_ptsz,
    cuDeviceGetDefaultMemPool,
    cuDeviceGetMemPool,
    cuMemPoolCreate,
    cuMemPoolDestroy,
    cuMemPoolTrimTo,
    cuMemPoolGetAttribute,
    cuMemPoolSetAttribute,
    cuMemAllocAsync,
    cuMemAllocAsync_ptsz,
    cuMemAllocFromPoolAsync,
    cuMemAllocFromPoolAsync_ptsz,
    cuMemFreeAsync,
    cuMemFreeAsync_ptsz,
    cuIpcGetMemHandle,
    cuIpcOpenMemHandle,
    cuIpcOpenMemHandle_v2,
    cuIpcCloseMemHandle,
    cuIpcGetEventHandle,
    cuIpcOpenEventHandle,
    cuModuleLoadData,
    cuModuleLoadFatBinary,
    cuModuleLoadDataEx,
    cuModuleLoad,
    cuModuleUnload,
    cuModuleGetFunction,
    cuModuleGetGlobal_v2,
    cuLibraryLoadData,
    cuLibraryUnload,
    cuLibraryGetKernel,
    cuLibraryGetModule,
    cuLibraryGetGlobal,
    cuKernelGetFunction,
    cuFuncGetName,
    cuKernelGetName,
    cuFuncGetModule,
    cuKernelGetLibrary,
    cuModuleGetFunctionCount,
    cuModuleGetLoadingMode,
    cuLibraryGetManaged,
    cuLibraryGetKernelCount,
    cuModuleEnumerateFunctions,
    cuLibraryEnumerateKernels,
    cuLibraryLoadFromFile,
    cuFuncIsLoaded,
    cuFuncLoad,
    cuFuncGetParamInfo,
    cuKernelGetParamInfo,
    cuFuncGetAttribute,
    cuFuncSetAttribute,
    cuKernelGetAttribute,
    cuKernelSetAttribute,
    cuFuncSetCacheConfig,
    cuKernelSetCacheConfig,
    cuLinkCreate_v2,
    cuLinkAddData_v2,
    cuLinkAddFile_v2,
    cuLinkComplete,
    cuLinkDestroy,
    cuLaunchKernel,
    cuLaunchKernel_ptsz,
    cuLaunchKernelEx,
    cuLaunchKernelEx_ptsz,
    cuLaunchCooperativeKernel,
    cuLaunchCooperativeKernel_ptsz,
    cuOccupancyMaxActiveBlocksPerMultiprocessor,
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    cuOccupancyMaxPotentialBlockSize,
    cuOccupancyAvailableDynamicSMemPerBlock,
    cuOccupancyMaxPotentialBlockSizeWithFlags,
    cuStreamCreate,
    cuStreamCreateWithPriority,
    cuStreamDestroy_v2,
    cuStreamSynchronize,
    cuStreamSynchronize_ptsz,
    cuStreamQuery,
    cuStreamQuery_ptsz,
    cuStreamWaitEvent,
    cuStreamWaitEvent_ptsz,
    cuStreamGetCtx,
    cuStreamGetFlags,
    cuStreamGetPriority,
    cuStreamIsCapturing,
    cuStreamIsCapturing_ptsz,
    cuStreamGetCaptureInfo_ptsz,
    cuStreamBeginCaptureToGraph,
    cuStreamBeginCaptureToGraph_ptsz,
    cuStreamUpdateCaptureDependencies,
    cuStreamUpdateCaptureDependencies_ptsz,
    cuStreamUpdateCaptureDependencies_v2,
    cuStreamUpdateCaptureDependencies_v2_ptsz,
    cuStreamAddCallback_ptsz,
    cuLaunchHostFunc_v2,
    cuLaunchHostFunc_v2_ptsz,
    cuGraphCreate,
    cuGraphAddEmptyNode,
    cuGraphAddKernelNode,
    cuGraphAddKernelNode_v2,
    cuGraphAddMemcpyNode,
    cuGraphAddMemsetNode,
    cuGraphAddHostNode,
    cuGraphAddEventRecordNode,
    cuGraphAddEventWaitNode,
    cuGraphAddDependencies,
    cuGraphAddDependencies_v2,
    cuGraphRemoveDependencies,
    cuGraphRemoveDependencies_v2,
    cuGraphGetNodes,
    cuGraphGetRootNodes,
    cuGraphGetEdges,
    cuGraphGetEdges_v2,
    cuGraphNodeGetType,
    cuGraphNodeGetDependencies,
    cuGraphNodeGetDependencies_v2,
    cuGraphNodeGetDependentNodes,
    cuGraphNodeGetDependentNodes_v2,
    cuGraphDestroyNode,
    cuGraphKernelNodeGetParams,
    cuGraphKernelNodeSetParams,
    cuGraphKernelNodeGetParams_v2,
    cuGraphKernelNodeSetParams_v2,
    cuGraphMemcpyNodeGetParams,
    cuGraphMemcpyNodeSetParams,
    cuGraphMemsetNodeGetParams,
    cuGraphMemsetNodeSetParams,
    cuGraphHostNodeGetParams,
    cuGraphHostNodeSetParams,
    cuGraphEventRecordNodeGetEvent,
    cuGraphEventRecordNodeSetEvent,
    cuGraphEventWaitNodeGetEvent,
    cuGraphEventWaitNodeSetEvent,
    cuGraphClone,
    cuGraphNodeFindInClone,
    cuGraphDebugDotPrint,
    cuGraphExecGetFlags,
    cuGraphExecKernelNodeSetParams,
    cuGraphExecKernelNodeSetParams_v2,
    cuGraphExecMemcpyNodeSetParams,
    cuGraphExecMemsetNodeSetParams,
    cuGraphExecHostNodeSetParams,
    cuGraphExecEventRecordNodeSetEvent,
    cuGraphExecEventWaitNodeSetEvent,
    cuGraphNodeSetEnabled,
    cuGraphNodeGetEnabled,
    cuGraphExecUpdate,
    cuGraphExecUpdate_v2,
    cuStreamBeginCapture,
    cuStreamBeginCapture_ptsz,
    cuStreamBeginCapture_v2,
    cuStreamBeginCapture_v2_ptsz,
    cuStreamEndCapture,
    cuStreamEndCapture_ptsz,
    cuStreamGetCaptureInfo,
    cuStreamGetCaptureInfo_v2,
    cuStreamGetCaptureInfo_v2_ptsz,
    cuStreamGetCaptureInfo_v3,
    cuStreamGetCaptureInfo_v3_ptsz,
    cuThreadExchangeStreamCaptureMode,
    cuGraphInstantiate,
    cuGraphInstantiate_v2,
    cuGraphInstantiateWithFlags,
    cuGraphInstantiateWithParams,
    cuGraphInstantiateWithParams_ptsz,
    cuGraphLaunch,
    cuGraphLaunch_ptsz,
    cuGraphUpload,
    cuGraphUpload_ptsz,
    cuGraphExecDestroy,
    cuGraphDestroy,
    cuUserObjectCreate,
    cuUserObjectRetain,
    cuUserObjectRelease,
    cuGraphRetainUserObject,
    cuGraphReleaseUserObject,
    cuLaunchHostFunc,
    cuLaunchHostFunc_ptsz,
    cuStreamAddCallback,
    cuEventCreate,
    cuEventDestroy_v2,
    cuEventRecord,
    cuEventRecord_ptsz,
    cuEventRecordWithFlags,
    cuStreamGetId,
    cuStreamGetId_ptsz,
    cuStreamGetDevice,
    cuStreamGetDevice_ptsz,
    cuEventRecordWithFlags_ptsz,
    cuEventQuery,
    cuEventSynchronize,
    cuEventElapsedTime,
    cuEventElapsedTime_v2,
    cuTensorMapEncodeTiled,
    cuTensorMapReplaceAddress,
    cuTensorMapEncodeIm2col,
    cuTensorMapEncodeIm2colWide,
    cuArrayCreate_v2,
    cuArray3DCreate_v2,
    cuArrayDestroy,
    cuArrayGetDescriptor_v2,
    cuArray3DGetDescriptor_v2,
    cuMipmappedArrayCreate,
    cuMipmappedArrayGetLevel,
    cuMipmappedArrayDestroy,
    cuTexObjectCreate,
    cuTexObjectDestroy,
    cuSurfObjectCreate,
    cuSurfObjectDestroy,
    cuModuleGetTexRef,
    cuModuleGetSurfRef,
    cuTexRefSetArray,
    cuSurfRefSetArray,
    cuTexRefSetAddress_v2,
    cuTexRefSetAddress2D_v3,
    cuTexRefSetFormat,
    cuTexRefSetAddressMode,
    cuTexRefSetFilterMode,
    cuTexRefSetFlags,
    cuTexRefSetBorderColor,
);

fn lookup(
    symbol: *const c_char,
    pfn: *mut *const c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> Result<(), CUresult> {
    // SAFETY: `symbol` is a NUL-terminated string (CUDA's contract).
    let name = unsafe { c_str(symbol) }?;
    let version = u32::try_from(version).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM != 0;
    let found = resolve(name, version, per_thread).and_then(export);
    crate::trace::trace!(
        "cuGetProcAddress {name} version {version} flags {flags}: {}",
        if found.is_some() {
            resolve(name, version, per_thread).unwrap_or("?")
        } else {
            "NOT_FOUND"
        }
    );
    let report = |s: c_int| {
        if !status.is_null() {
            // SAFETY: non-null and writable (CUDA's contract).
            let _ = unsafe { out(status, s) };
        }
    };
    match found {
        Some(address) => {
            report(SYMBOL_FOUND);
            // SAFETY: `pfn` is null or writable (CUDA's contract).
            unsafe { out(pfn, address) }
        }
        None => {
            report(if needs_newer(name, version) {
                VERSION_NOT_SUFFICIENT
            } else {
                SYMBOL_NOT_FOUND
            });
            if !pfn.is_null() {
                // SAFETY: non-null and writable.
                let _ = unsafe { out(pfn, std::ptr::null()) };
            }
            Err(CUresult::CUDA_ERROR_NOT_FOUND)
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *const c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    entry(|| lookup(symbol, pfn, version, flags, std::ptr::null_mut()))
}

#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *const c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CUresult {
    entry(|| lookup(symbol, pfn, version, flags, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_variant_at_or_before_the_version() {
        assert_eq!(resolve("cuCtxCreate", 3020, false), Some("cuCtxCreate_v2"));
        assert_eq!(resolve("cuCtxCreate", 12000, false), Some("cuCtxCreate_v3"));
        assert_eq!(resolve("cuMemcpyHtoDAsync", 12090, true), Some("cuMemcpyHtoDAsync_v2_ptsz"));
        assert_eq!(resolve("cuMemcpyHtoDAsync", 12090, false), Some("cuMemcpyHtoDAsync_v2"));
        // No per-thread variant: the ordinary one.
        assert_eq!(resolve("cuInit", 12090, true), Some("cuInit"));
        assert_eq!(resolve("cuNoSuchThing", 12090, false), None);
        assert!(needs_newer("cuCtxCreate", 3010));
        // Asked for by clients: the profiler is here, graphics interop is not.
        assert!(resolve("cuProfilerStart", 12090, false).and_then(export).is_some());
        assert!(resolve("cuGLInit", 12090, false).is_some_and(|e| export(e).is_none()));
    }

    #[test]
    fn every_listed_export_resolves_to_itself() {
        for name in EXPORTS {
            assert!(export(name).is_some(), "{name}");
        }
    }
}
