//! Spin's PostgreSQL values to and from tokio-postgres', for
//! `fermyon:spin/postgres@2.0.0` (`v2`) and `spin:postgres/postgres@4.2.0`
//! (`v4`) alike: booleans, signed integers, floats, text and bytes, the
//! cases both versions have and Spin converts. Other column types read as
//! `unsupported` (or `db-null`); other parameters are refused (2.0's unsigned
//! ones as Spin refuses them, PostgreSQL having no unsigned types).

use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::Row;

use super::pool::{BoxedParam, PoolError};

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

/// A non-NULL value of a type the values cannot carry: its raw bytes.
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// One version's conversions; the names of the shared cases are the same
/// in both, the rest differ: `$refused` parameters, `$other` column types,
/// `$unsupported` values.
macro_rules! conversions {
    ($refused:pat => $refusal:expr, $other:expr, $unsupported:expr) => {
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
                $refused => return Err(Error::ValueConversionFailed($refusal)),
            })
        }

        /// A column type's case, and how its values read.
        pub fn kind(ty: &Type) -> (DbDataType, fn(&Row, usize) -> Result<DbValue, String>) {
            fn get<'a, T: FromSql<'a>>(
                row: &'a Row,
                i: usize,
                wrap: fn(T) -> DbValue,
            ) -> Result<DbValue, String> {
                let value = row.try_get::<_, Option<T>>(i).map_err(|e| format!("{e:?}"))?;
                Ok(value.map_or(DbValue::DbNull, wrap))
            }
            match *ty {
                Type::BOOL => (DbDataType::Boolean, |r, i| get(r, i, DbValue::Boolean)),
                Type::BYTEA => (DbDataType::Binary, |r, i| get(r, i, DbValue::Binary)),
                Type::FLOAT4 => (DbDataType::Floating32, |r, i| get(r, i, DbValue::Floating32)),
                Type::FLOAT8 => (DbDataType::Floating64, |r, i| get(r, i, DbValue::Floating64)),
                Type::INT2 => (DbDataType::Int16, |r, i| get(r, i, DbValue::Int16)),
                Type::INT4 => (DbDataType::Int32, |r, i| get(r, i, DbValue::Int32)),
                Type::INT8 => (DbDataType::Int64, |r, i| get(r, i, DbValue::Int64)),
                Type::TEXT | Type::VARCHAR | Type::BPCHAR => {
                    (DbDataType::Str, |r, i| get(r, i, DbValue::Str))
                }
                _ => ($other(ty), |r, i| get(r, i, $unsupported)),
            }
        }

        /// A row's values, or Spin's error for one that does not convert.
        pub fn values(row: &Row) -> Result<Vec<DbValue>, Error> {
            let columns = row.columns().iter().enumerate();
            let values = columns.map(|(i, column)| kind(column.type_()).1(row, i));
            values.collect::<Result<_, _>>().map_err(|text| PoolError::QueryFailed(text).into())
        }

        /// As in Spin, from a row: none when there is no row.
        pub fn columns(row: &Row) -> Vec<Column> {
            let column = |c: &tokio_postgres::Column| Column {
                name: c.name().to_string(),
                data_type: kind(c.type_()).0,
            };
            row.columns().iter().map(column).collect()
        }

        pub fn row_set(rows: &[Row]) -> Result<RowSet, Error> {
            let columns = rows.first().map(columns).unwrap_or_default();
            Ok(RowSet { columns, rows: rows.iter().map(values).collect::<Result<_, _>>()? })
        }
    };
}

pub mod v2 {
    use super::*;
    use crate::bindings::fermyon::spin::rdbms_types::{
        Column, DbDataType, DbValue, Error, ParameterValue, RowSet,
    };

    conversions!(
        ParameterValue::Uint8(_)
            | ParameterValue::Uint16(_)
            | ParameterValue::Uint32(_)
            | ParameterValue::Uint64(_)
            => "Postgres does not support unsigned integers".into(),
        |_| DbDataType::Other,
        |_: Raw| DbValue::Unsupported
    );
}

pub mod v4 {
    use super::*;
    use crate::bindings::spin::postgres::postgres::{
        Column, DbDataType, DbValue, Error, ParameterValue, RowSet,
    };

    conversions!(
        other => format!("spin-lite does not convert this parameter: {other:?}"),
        |ty: &Type| DbDataType::Other(ty.name().to_string()),
        |raw: Raw| DbValue::Unsupported(raw.0)
    );
}

#[cfg(test)]
mod tests {
    use super::v2::{kind, to_sql};
    use super::*;
    use crate::bindings::fermyon::spin::rdbms_types::{DbDataType, Error, ParameterValue as P};
    use crate::bindings::spin::postgres::postgres as p4;

    #[test]
    fn parameters_convert_but_unsigned_ones() {
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
                matches!(refused, Some(Error::ValueConversionFailed(m)) if m.contains("unsigned"))
            );
        }
    }

    #[test]
    fn column_types_map_as_spin_maps_them() {
        assert!(matches!(kind(&Type::INT8).0, DbDataType::Int64));
        assert!(matches!(kind(&Type::VARCHAR).0, DbDataType::Str));
        assert!(matches!(kind(&Type::BPCHAR).0, DbDataType::Str));
        assert!(matches!(kind(&Type::BYTEA).0, DbDataType::Binary));
        // Types `rdbms-types` 2.0 has no case for; 4.2 names them.
        for ty in [Type::NUMERIC, Type::TIMESTAMPTZ, Type::UUID, Type::JSONB] {
            assert!(matches!(kind(&ty).0, DbDataType::Other), "{ty}");
            let named = v4::kind(&ty).0;
            assert!(matches!(&named, p4::DbDataType::Other(n) if *n == ty.name()), "{ty}");
        }
        use p4::ParameterValue as P4;
        assert!(v4::to_sql(&P4::Int32(1)).is_ok() && v4::to_sql(&P4::DbNull).is_ok());
        let refused = v4::to_sql(&P4::Uuid("u".into())).err();
        assert!(matches!(refused, Some(p4::Error::ValueConversionFailed(m)) if m.contains("Uuid")));
    }
}
