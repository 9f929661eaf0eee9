//! Multi-row statements for the writes a group commit runs together, and the parameters
//! of each (written by [`Dialect::param`], in the order they are bound). Rows are cut in pieces whose sizes are powers of two: each database
//! prepares eight statement shapes of a write, not one per batch size, and a batch of up
//! to 255 rows takes one statement per one in its size's binary form (seven rows: 4 + 2 +
//! 1).

use super::{Bind, Dialect, Sql};

/// The sizes statements are cut in, largest first (the last must be 1). Powers of two:
/// with sizes further apart a small batch falls through to one-row statements (with 128,
/// 32, 8 and 1, seven rows took seven), and each statement is a round trip to the
/// database (on SQLite, a hand-off to sqlx's worker thread and back).
pub(crate) const PIECES: [usize; 8] = [128, 64, 32, 16, 8, 4, 2, 1];

/// Prepared statements each connection keeps (sqlx's default is 100). The bulk writes
/// alone have a shape per size of [`PIECES`]: 40 on SQLite, 56 on PostgreSQL (which also
/// locks rows in pieces), beside the stores' other statements; a connection that had to
/// forget some would prepare them again, on PostgreSQL a round trip each.
pub(crate) const STATEMENT_CACHE: usize = 256;

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

/// `($1, $2), ($3, $4), ...` (on SQLite `(?, ?), (?, ?), ...`): `rows` rows of `width`
/// parameters, numbered from 1 in order.
pub(crate) fn placeholders<D: Dialect>(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|row| format!("({})", params::<D>(row * width + 1, width)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `$first, ...`: `count` parameters numbered from `first`, separated by commas.
pub(crate) fn params<D: Dialect>(first: usize, count: usize) -> String {
    (first..first + count)
        .map(D::param)
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
        let list = params::<D>(1, piece.len());
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
        assert_eq!(sizes, [128, 32, 8, 2]);
        assert_eq!(pieces(&rows).concat(), rows);
        // A batch below twice the largest piece takes one statement per binary one.
        for n in 1..256usize {
            let rows: Vec<usize> = (0..n).collect();
            assert_eq!(pieces(&rows).len(), n.count_ones() as usize, "{n} rows");
        }
        // SQLite binds anonymous parameters in order, without looking their names up.
        assert_eq!(placeholders::<sqlx::Sqlite>(2, 2), "(?, ?), (?, ?)");
        assert_eq!(params::<sqlx::Sqlite>(3, 3), "?, ?, ?");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_parameters_are_numbered_in_order() {
        let values = placeholders::<sqlx::Postgres>(2, 3);
        assert_eq!(values, "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(params::<sqlx::Postgres>(7, 2), "$7, $8");
    }
}
