//! What a walk over a module's parameters (a burn visitor's or mapper's) needs to know of
//! where it is.

/// Whether a module walk (a visitor's or a mapper's) is inside a LoRA adapter: burn enters a
/// parameter's reparameterization as a module of that container type, after its base, and a
/// stacked expert matrix's factors as fields of `models::moe::StackedAdapter`.
#[derive(Default)]
pub struct AdapterDepth(usize);

impl AdapterDepth {
    pub fn enter(&mut self, container_type: &str) {
        if is_adapter(container_type) {
            self.0 += 1;
        }
    }

    pub fn exit(&mut self, container_type: &str) {
        if is_adapter(container_type) {
            self.0 -= 1;
        }
    }

    /// The parameters visited now are an adapter's factors.
    pub fn inside(&self) -> bool {
        self.0 > 0
    }
}

/// The container type a module walk is given inside `models::moe::StackedAdapter` (burn's derive
/// names the struct a field belongs to): its factors are an adapter's, as a
/// `Reparameterization`'s are.
pub const STACKED_ADAPTER: &str = "Struct:StackedAdapter";

fn is_adapter(container_type: &str) -> bool {
    container_type == "Reparameterization" || container_type == STACKED_ADAPTER
}
