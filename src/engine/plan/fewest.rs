//! For a budget a run does not fit: the fewest GPUs it fits on at each sharding that applies to
//! it, each count planned. Counts are powers of two (the GPUs a node holds, and nodes of them):
//! the analytic estimate picks the first to plan, and plans go down while they fit or up (at
//! most [`MORE`] doublings) until one does. A sharding whose estimate passes the budget even on
//! the most GPUs vramlab plans (what it keeps whole on each GPU does: SHARD_GRAD_OP's gathered
//! blocks, ZeRO-1's parameters and gradients, the activations) is not planned, and says so.

use serde::{Deserialize, Serialize};

use crate::engine::config::{Budget, RunConfig, Sharding, limits};
use crate::engine::device::Gpu;
use crate::engine::error::EngineError;
use crate::engine::memory::predict;
use crate::engine::validate::Purpose;

use super::follow;

/// The fewest GPUs found for one sharding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FewestGpus {
    pub sharding: Sharding,
    /// The fewest GPUs whose plan fits the budget; `None` when not even the most vramlab plans
    /// do.
    pub gpus: Option<usize>,
    /// That plan's high-water mark in use, one GPU's.
    pub high_water_in_use_bytes: Option<u64>,
    /// Each count planned, and whether it fit.
    pub planned: Vec<(usize, bool)>,
}

/// Doublings planned past the estimate's count before a sharding is given up.
const MORE: usize = 2;

/// The shardings searched, in the order they are reported.
const SHARDINGS: [Sharding; 3] = [Sharding::Full, Sharding::Gradients, Sharding::Optimizer];

/// For each sharding `config` may take (its other strategies as they are), the fewest GPUs under
/// `budget` bytes, in use and reserved.
pub async fn search(
    config: &RunConfig,
    gpu: &Gpu,
    budget: u64,
    on_step: &mut dyn FnMut(usize),
) -> Result<Vec<FewestGpus>, EngineError> {
    let mut found = Vec::new();
    for sharding in SHARDINGS {
        let at = |gpus: usize| {
            let mut changed = config.clone();
            changed.strategies.sharding = sharding;
            changed.gpus = gpus;
            changed.budget = None;
            changed
        };
        if at(2).validate_for(Purpose::Plan).is_err() {
            continue;
        }
        let most = limits::GPUS.1;
        if predict(&at(most)).peak > budget {
            found.push(FewestGpus {
                sharding,
                gpus: None,
                high_water_in_use_bytes: None,
                planned: Vec::new(),
            });
            continue;
        }
        let mut gpus = 2;
        while gpus < most && predict(&at(gpus)).peak > budget {
            gpus *= 2;
        }
        let mut planned: Vec<(usize, bool, u64)> = Vec::new();
        // Fits as `plan::plan` judges it: under the budget at every launch, or else through a
        // budgeted run's checks (which release cached pages).
        let mut plan = async |gpus: usize| -> Result<(bool, u64), EngineError> {
            let summary = follow(at(gpus), gpu, on_step).await?.summary;
            let in_use = summary.high_water_in_use_bytes;
            if in_use <= budget && summary.high_water_reserved_bytes <= budget {
                return Ok((true, in_use));
            }
            let mut budgeted = at(gpus);
            budgeted.budget = Some(Budget::Bytes(budget));
            match follow(budgeted, gpu, on_step).await {
                Ok(_) => Ok((true, in_use)),
                Err(EngineError::OutOfMemory(_)) => Ok((false, in_use)),
                Err(other) => Err(other),
            }
        };
        let (fits, in_use) = plan(gpus).await?;
        planned.push((gpus, fits, in_use));
        if fits {
            while gpus > 2 {
                let (fits, in_use) = plan(gpus / 2).await?;
                planned.push((gpus / 2, fits, in_use));
                if !fits {
                    break;
                }
                gpus /= 2;
            }
        } else {
            for _ in 0..MORE {
                if gpus >= most {
                    break;
                }
                gpus *= 2;
                let (fits, in_use) = plan(gpus).await?;
                planned.push((gpus, fits, in_use));
                if fits {
                    break;
                }
            }
        }
        let fewest = planned
            .iter()
            .filter(|(_, fits, _)| *fits)
            .min_by_key(|(gpus, _, _)| *gpus);
        found.push(FewestGpus {
            sharding,
            gpus: fewest.map(|(gpus, _, _)| *gpus),
            high_water_in_use_bytes: fewest.map(|(_, _, in_use)| *in_use),
            planned: planned.iter().map(|(g, fits, _)| (*g, *fits)).collect(),
        });
    }
    Ok(found)
}
