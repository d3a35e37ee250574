//! `rdbms-types` values to and from PostgreSQL, as Spin converts them for
//! `fermyon:spin/postgres@2.0.0`: booleans, signed integers, floats, text and
//! bytes; a column of any other type reads as `unsupported` (or `db-null`),
//! and unsigned parameters are refused (PostgreSQL has no unsigned types).

use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::Row;

use crate::bindings::fermyon::spin::rdbms_types::{
    Column, DbDataType, DbValue, Error, ParameterValue,
};

pub type BoxedParam = Box<dyn ToSql + Sync + Send>;

/// One parameter, or Spin's error for a value PostgreSQL cannot take.
pub fn to_sql(p: &ParameterValue) -> Result<BoxedParam, Error> {
    Ok(match p {
        ParameterValue::Boolean(v) => Box::new(*v),
        ParameterValue::Int8(v) => Box::new(*v),
        ParameterValue::Int16(v) => Box::new(*v),
        ParameterValue::Int32(v) => Box::new(*v),
        ParameterValue::Int64(v) => Box::new(*v),
        ParameterValue::Floating32(v) => Box::new(*v),
        ParameterValue::Floating64(v) => Box::new(*v),
        ParameterValue::Str(v) => Box::new(v.clone()),
        ParameterValue::Binary(v) => Box::new(v.clone()),
        ParameterValue::DbNull => Box::new(Null),
        ParameterValue::Uint8(_)
        | ParameterValue::Uint16(_)
        | ParameterValue::Uint32(_)
        | ParameterValue::Uint64(_) => {
            return Err(Error::ValueConversionFailed(
                "Postgres does not support unsigned integers".into(),
            ))
        }
    })
}

/// SQL NULL for a parameter of any type.
#[derive(Debug)]
struct Null;

impl ToSql for Null {
    fn to_sql(
        &self,
        _: &Type,
        _: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Ok(IsNull::Yes)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    to_sql_checked!();
}

/// A non-NULL value of a type `rdbms-types` cannot carry (its bytes unread).
struct Present;

impl<'a> FromSql<'a> for Present {
    fn from_sql(_: &Type, _: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Present)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

pub fn data_type(ty: &Type) -> DbDataType {
    match *ty {
        Type::BOOL => DbDataType::Boolean,
        Type::BYTEA => DbDataType::Binary,
        Type::FLOAT4 => DbDataType::Floating32,
        Type::FLOAT8 => DbDataType::Floating64,
        Type::INT2 => DbDataType::Int16,
        Type::INT4 => DbDataType::Int32,
        Type::INT8 => DbDataType::Int64,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => DbDataType::Str,
        _ => DbDataType::Other,
    }
}

fn get<'a, T: FromSql<'a>>(
    row: &'a Row,
    i: usize,
    wrap: fn(T) -> DbValue,
) -> Result<DbValue, String> {
    let value = row.try_get::<_, Option<T>>(i).map_err(|e| format!("{e:?}"))?;
    Ok(value.map_or(DbValue::DbNull, wrap))
}

fn db_value(row: &Row, i: usize, ty: &Type) -> Result<DbValue, String> {
    match *ty {
        Type::BOOL => get(row, i, DbValue::Boolean),
        Type::BYTEA => get(row, i, DbValue::Binary),
        Type::FLOAT4 => get(row, i, DbValue::Floating32),
        Type::FLOAT8 => get(row, i, DbValue::Floating64),
        Type::INT2 => get(row, i, DbValue::Int16),
        Type::INT4 => get(row, i, DbValue::Int32),
        Type::INT8 => get(row, i, DbValue::Int64),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => get(row, i, DbValue::Str),
        _ => get(row, i, |_: Present| DbValue::Unsupported),
    }
}

/// The columns (from the first row: none when there is no row, as in Spin)
/// and the rows of a query result.
pub fn row_set(rows: &[Row]) -> Result<(Vec<Column>, Vec<Vec<DbValue>>), Error> {
    let columns = rows
        .first()
        .map(|row| {
            row.columns()
                .iter()
                .map(|c| Column { name: c.name().to_string(), data_type: data_type(c.type_()) })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut values = Vec::with_capacity(row.len());
        for (i, col) in row.columns().iter().enumerate() {
            values.push(db_value(row, i, col.type_()).map_err(Error::QueryFailed)?);
        }
        out.push(values);
    }
    Ok((columns, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_convert_but_unsigned_ones() {
        use ParameterValue as P;
        for ok in [P::Boolean(true), P::Int8(-1), P::Int16(-1), P::Int32(-1), P::Int64(-1)] {
            assert!(to_sql(&ok).is_ok(), "{ok:?}");
        }
        for ok in [P::Floating32(0.5), P::Floating64(0.5), P::Str("x".into()), P::Binary(vec![1])] {
            assert!(to_sql(&ok).is_ok(), "{ok:?}");
        }
        assert!(to_sql(&P::DbNull).is_ok());
        for unsigned in [P::Uint8(1), P::Uint16(1), P::Uint32(1), P::Uint64(1)] {
            let refused = to_sql(&unsigned).err();
            assert!(
                matches!(&refused, Some(Error::ValueConversionFailed(m)) if m.contains("unsigned"))
            );
        }
    }

    #[test]
    fn column_types_map_as_spin_maps_them() {
        assert!(matches!(data_type(&Type::INT8), DbDataType::Int64));
        assert!(matches!(data_type(&Type::VARCHAR), DbDataType::Str));
        assert!(matches!(data_type(&Type::BPCHAR), DbDataType::Str));
        assert!(matches!(data_type(&Type::BYTEA), DbDataType::Binary));
        // Types `rdbms-types` 2.0 has no case for.
        for ty in [Type::NUMERIC, Type::TIMESTAMPTZ, Type::UUID, Type::JSONB] {
            assert!(matches!(data_type(&ty), DbDataType::Other), "{ty}");
        }
        assert!(row_set(&[]).unwrap().0.is_empty());
    }
}
