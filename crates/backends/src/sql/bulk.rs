//! Multi-row statements for the writes a group commit runs together: rows cut in pieces
//! of a few fixed sizes, so each database prepares a handful of statement shapes rather
//! than one per batch size, and the numbered parameters of each piece.

use super::{Bind, Sql};

/// The sizes statements are cut in, largest first (the last must be 1).
pub(crate) const PIECES: [usize; 4] = [128, 32, 8, 1];

/// `items` cut into pieces of the sizes of [`PIECES`]: as many of the largest as fit,
/// then of the next, and so on.
pub(crate) fn pieces<T>(items: &[T]) -> Vec<&[T]> {
    let mut out = Vec::new();
    let mut rest = items;
    for size in PIECES {
        while rest.len() >= size {
            let (piece, tail) = rest.split_at(size);
            out.push(piece);
            rest = tail;
        }
    }
    out
}

/// `($1, $2), ($3, $4), ...`: `rows` groups of `width` numbered parameters, each written
/// by `group` from its parameter numbers.
pub(crate) fn placeholders(
    rows: usize,
    width: usize,
    group: impl Fn(&[usize]) -> String,
) -> String {
    (0..rows)
        .map(|row| {
            let numbers: Vec<usize> = (1..=width).map(|n| row * width + n).collect();
            group(&numbers)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rows `query` selects for `keys`, read in pieces: `query` writes the statement
/// around the list of a piece's parameters (`... WHERE id IN ({list})`).
pub(crate) async fn fetch_for_keys<D: Sql>(
    conn: &mut D::Connection,
    keys: &[&str],
    query: impl Fn(&str) -> String,
) -> Result<Vec<D::Row>, sqlx::Error> {
    let mut rows = Vec::with_capacity(keys.len());
    for piece in pieces(keys) {
        let list = placeholders(piece.len(), 1, |n| format!("${}", n[0]));
        let statement = query(&list);
        let found = piece
            .iter()
            .fold(Bind::<D>::new(&statement), |bind, key| bind.text(key))
            .fetch_all(&mut *conn)
            .await?;
        rows.extend(found);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_cut_in_the_fixed_sizes_and_numbered_in_order() {
        let rows: Vec<u32> = (0..170).collect();
        let sizes: Vec<usize> = pieces(&rows).iter().map(|piece| piece.len()).collect();
        assert_eq!(sizes, [128, 32, 8, 1, 1]);
        assert_eq!(pieces(&rows).concat(), rows);
        let values = placeholders(2, 3, |n| format!("(${}, ${}, ${})", n[0], n[1], n[2]));
        assert_eq!(values, "($1, $2, $3), ($4, $5, $6)");
    }
}
