//! The floor of the benchmark: a wasi:http component that does nothing but
//! answer a fixed envelope, so a run against it measures what an instance
//! per request costs the host. It answers the way the Book Catalog
//! component does (one header, status, body in one write).

use spin_sdk::http::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};

const BODY: &[u8] = br#"{"status":200,"message":"ok","data":null}"#;

#[spin_sdk::http_component]
async fn handle_request(_request: IncomingRequest, response_out: ResponseOutparam) {
    let headers = [("content-type".to_string(), b"application/json".to_vec())];
    let Ok(fields) = Fields::from_list(&headers) else {
        return;
    };
    let response = OutgoingResponse::new(fields);
    let _ = response_out.set_with_body(response, BODY.to_vec()).await;
}
