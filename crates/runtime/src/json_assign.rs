//! Writing one JSON value over another in place, keeping the buffers that fit: what a
//! checkpoint encoder does to move its copy of a run's state on.

use serde_json::Value;

/// Makes `into` equal to `from`, keeping the allocations of `into` that fit: strings,
/// arrays and objects with the same fields are written over, not made again.
pub(crate) fn assign(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from))
            if into.len() == from.len() && into.keys().eq(from.keys()) =>
        {
            for ((_, into), (_, from)) in into.iter_mut().zip(from) {
                assign(into, from);
            }
        }
        (Value::Array(into), Value::Array(from)) => {
            into.truncate(from.len());
            let kept = into.len();
            for (into, from) in into.iter_mut().zip(from) {
                assign(into, from);
            }
            into.extend_from_slice(&from[kept..]);
        }
        (Value::String(into), Value::String(from)) => into.clone_from(from),
        (into, from) => *into = from.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assigning_a_value_makes_it_equal_whatever_it_held() {
        let values = [
            Value::Null,
            json!(3),
            json!("text"),
            json!("longer text"),
            json!([1, "two", [3]]),
            json!([1, "one", [3, 4], {"k": 5}]),
            json!([]),
            json!({"x": 1, "loops": 0}),
            json!({"x": 2, "loops": [1, {"deep": "er"}]}),
            json!({"x": 1, "other": 0}),
            json!({}),
        ];
        for from in &values {
            for into in &values {
                let mut into = into.clone();
                assign(&mut into, from);
                assert_eq!(&into, from);
            }
        }
    }
}
