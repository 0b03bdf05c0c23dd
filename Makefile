# The two set-up commands of the README. Both install what is missing first
# (scripts/setup: the Vulkan loader, lavapipe, SPIRV-Tools).

.PHONY: demo test setup wheel

# Mesa 22.3's lavapipe, extracted by scripts/old-mesa: where it is, the driver-bug
# probes' tests run on it too.
OLD_MESA_ICD ?= /opt/mesa-22.3/usr/share/vulkan/icd.d/lvp_icd.x86_64.json

setup:
	@scripts/setup

# Builds in release everything the README then uses (the `ptxvk` command and the driver
# library, libcuda.so.1), runs every bundled kernel on the default Vulkan device, and
# ends with one `ptxvk exec` run: a CUDA driver API client that knows nothing of ptxvk.
demo: setup
	cargo build --release -p ptxvk -p ptxvk-cuda-driver --bins --lib \
		--example demo --example client
	target/release/examples/demo
	target/release/ptxvk exec -- target/release/examples/client

# The Python wheel of the release binaries (the `ptxvk` command and libcuda.so.1), in
# target/wheels: `pip install target/wheels/ptxvk-*.whl`.
wheel:
	cargo build --release -p ptxvk -p ptxvk-cuda-driver --bins --lib
	scripts/build-wheel release target/wheels

# Formatting, lints with warnings as errors, and the whole test suite (unit,
# end-to-end on the Vulkan device, doctests).
#
# The runtime's tests run a second time under the Khronos validation layers, and any
# validation warning or error aborts them (PTXVK_VALIDATION_ABORT). scripts/python-tests
# runs cuda.core and numba-cuda kernels through the driver library (pip, into a venv).
# scripts/nvcc-env installs CUDA 13's nvcc and runtime (pip, into target/nvcc-venv) for
# the driver library's CUDA runtime programs (cuda-driver/tests/cudart.rs).
test: setup
	# The wheel test's fresh venv (pip) is made in the background meanwhile;
	# scripts/wheel-test, last, waits for it.
	mkdir -p target/wheel-test && (scripts/wheel-test --prepare >target/wheel-test/prepare.log 2>&1 &)
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	# Module docs are the crates' specifications (the IR's above all): their links must
	# resolve, in every crate.
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items
	scripts/nvcc-env >/dev/null
	cargo test --workspace
	VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation PTXVK_VALIDATION_ABORT=1 cargo test -p ptxvk-vk
	VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation PTXVK_VALIDATION_ABORT=1 \
		cargo test -p ptxvk --test streams_e2e --test syscalls_e2e --test memory_e2e \
			--test grid_sync_e2e --test link_e2e --test check_e2e
	# The driver library's abuse test (random valid and invalid call sequences from
	# four threads) once more under the validation layers and as checked launches.
	VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation PTXVK_VALIDATION_ABORT=1 PTXVK_CHECK=memcheck \
		cargo test -p ptxvk-cuda-driver --test abuse
	# Once more on a device without shaderFloat64: every kernel without f64 values runs
	# (the two skipped tests use f64 kernels), and f32, half and `.approx` arithmetic
	# stay exact.
	PTXVK_MASK_FEATURES=shaderFloat64 cargo test -p ptxvk --test kernels_e2e \
		--test recursion_e2e --test warp_e2e -- --skip calls_device_functions_inlined \
		--skip registers_of_every_kind_live_across_calls
	PTXVK_MASK_FEATURES=shaderFloat64 cargo test -p ptxvk --test math_kernels_e2e \
		--test ops_e2e -- half_math_f16_and_bf16 half_precision_arithmetic \
		f32_arithmetic_fma_min_max div_sqrt_rcp_rn_f32 half_comparisons math_fast_approx
	# Once more as checked launches (racecheck, which includes memcheck): the correct
	# kernels of the corpus make no invalid access and have no shared-memory race, and
	# checking changes none of their results. (Not ops_e2e: its one-kernel-per-
	# instruction-family modules take lavapipe minutes to compile checked,
	# docs/benchmarks.md. Not the histogram's six builds: clang 14's has a real race,
	# which check_e2e asserts. Not the double-buffered GEMM: with the warp scratch, its
	# racecheck shadow exceeds lavapipe's 32 KiB of shared memory, nor are the absent-lane
	# collectives, whose shuffle kernel's 8 KiB of warp scratch does. Not the block-scope
	# cuda::pipeline: lavapipe takes about a minute to compile its sm_80 build checked.)
	# Not the two warp_e2e sweeps over every block size and every divergent shape: checked,
	# each takes lavapipe over a minute to compile cold, and together they pushed a cold
	# `make test` past 15 minutes; they run unchecked above.
	# Checked modules take lavapipe long to compile on a cold shader cache (CI's): waits
	# get five minutes instead of one.
	PTXVK_CHECK=racecheck PTXVK_TIMEOUT_MS=300000 cargo test -p ptxvk --test kernels_e2e --test math_kernels_e2e \
		--test atomics_e2e --test memory_e2e --test warp_e2e --test control_e2e \
		--test recursion_e2e --test syscalls_e2e --test legacy_e2e --test link_e2e \
		--test grid_sync_e2e --test streams_e2e --test tensor_e2e --test async_copy_e2e \
		--test cluster_e2e --test mbarrier_e2e --test tensor_copy_e2e \
		-- --skip histogram_shared_then_global_atomics \
		--skip a_cutlass_style_gemm_with_cp_async_double_buffering \
		--skip collectives_over_the_lanes_that_arrive \
		--skip warp_collectives_in_divergent_control_flow \
		--skip warp_intrinsics_in_uniform_code_for_every_block_size \
		--skip a_block_scope_pipeline_of_memcpy_async_sums_in_order
	# And under initcheck: the corpus's kernels read only what the host or a kernel
	# wrote (a few suites; atomics_e2e alone would take three minutes).
	PTXVK_CHECK=initcheck PTXVK_TIMEOUT_MS=300000 cargo test -p ptxvk --test kernels_e2e --test memory_e2e \
		--test syscalls_e2e --test streams_e2e
	# The driver-bug probes' tests once more on Mesa 22.3's lavapipe where it is extracted
	# (scripts/old-mesa; CI does not have it): each of its bugs found, worked around
	# or refused.
	if [ -f "$(OLD_MESA_ICD)" ]; then \
		PTXVK_TEST_OLD_MESA_ICD="$(OLD_MESA_ICD)" cargo test -p ptxvk --test probes_e2e; fi
	scripts/python-tests
	# The wheel, installed into a fresh venv with numba-cuda, runs a kernel.
	scripts/wheel-test
