//! Native integration tests, one binary: they run on whatever wgpu adapter the machine has
//! (Mesa lavapipe in CI). GPU tests take a process-wide lock so allocator readings of one test
//! are not disturbed by another's tensors.

mod suite;
