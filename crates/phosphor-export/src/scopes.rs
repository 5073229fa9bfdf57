//! Scope checks, as Palanteer makes them: the scopes of a thread that do not nest (ends without a
//! begin or with another name, begins left open, interlaced scopes, late parents). They are the
//! trace model's (`phosphor_model::problems`), where the statistics and the SQL `problems` table
//! share them; the nesting itself is `phosphor_model::nesting`, shared with the folded stacks.

pub use phosphor_model::problems::{ScopeProblem, ScopeProblemKind};
