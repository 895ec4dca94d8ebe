//! Canonical formatting of `.ag` files (comments preserved).
