//! The driver library's trace (`PTXVK_LOG=driver`): what the runtime asks of it that
//! ptxvk does not answer, and what it writes for the client to read.

/// Whether `PTXVK_LOG` names `driver` (comma-separated list): every table request,
/// every slot call and every `cuGetProcAddress` lookup is then written to standard
/// error.
pub(crate) fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("PTXVK_LOG")
            .map(|v| v.split(',').any(|w| w.trim() == "driver" || w.trim() == "all"))
            .unwrap_or(false)
    })
}

/// Writes a trace line when [`tracing`].
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::trace::tracing() {
            eprintln!("ptxvk libcuda trace: {}", format_args!($($arg)*));
        }
    };
}
pub(crate) use trace;
