//! How long a value's JSON is, counted without writing the text: checkpoint records
//! sized for the snapshot rule, events and gate answers held to their limits.

use serde::Serialize;

/// The length in bytes of `value` serialized as compact JSON, counted as it is written,
/// without building the text. A value that cannot be serialized (a map with non-string
/// keys) counts what was written before the error.
///
/// ```
/// use agent_runtime::json_len;
/// use serde_json::json;
///
/// let value = json!({"type": "gate_answered", "gate_id": "g1"});
/// assert_eq!(json_len(&value), serde_json::to_string(&value).unwrap().len());
/// ```
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; only a value that cannot be serialized can.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
