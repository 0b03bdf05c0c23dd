# The two set-up commands of the README. Both install what is missing first
# (scripts/setup: the Vulkan loader, lavapipe, SPIRV-Tools).

.PHONY: demo test setup

setup:
	@scripts/setup

# Builds in release and runs every bundled kernel on the default Vulkan device.
demo: setup
	cargo run --release --example demo

# Formatting, lints with warnings as errors, and the whole test suite (unit,
# end-to-end on the Vulkan device, doctests).
test: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace
