//! `wasi:http/incoming-handler@0.2.0`: the request's method, path and
//! `If-None-Match` in, [`crate::answer`] out.

use std::io::Write as _;

use wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

wasi::http::proxy::export!(Page);

struct Page;

impl wasi::exports::http::incoming_handler::Guest for Page {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let method = match request.method() {
            Method::Get => crate::Method::Get,
            Method::Head => crate::Method::Head,
            _ => crate::Method::Other,
        };
        let target = request.path_with_query().unwrap_or_default();
        let path = target.split('?').next().unwrap_or_default();
        let tags = request.headers().get(&"if-none-match".to_string());
        let tags: Vec<_> = tags.iter().map(|v| String::from_utf8_lossy(v)).collect();
        let tags = Some(tags.join(", ")).filter(|t| !t.is_empty());
        let answer = crate::answer(method, path, tags.as_deref());
        let headers: Vec<_> =
            answer.headers.iter().map(|(n, v)| (n.to_string(), v.clone().into_bytes())).collect();
        // Without a response set the host answers a plain 500.
        let Ok(fields) = Fields::from_list(&headers) else { return };
        let response = OutgoingResponse::new(fields);
        let Ok(body) = response.body() else { return };
        if response.set_status_code(answer.status).is_err() {
            return;
        }
        ResponseOutparam::set(response_out, Ok(response));
        if let Ok(mut stream) = body.write() {
            let _ = stream.write_all(answer.body).and_then(|()| std::io::Write::flush(&mut stream));
        }
        let _ = OutgoingBody::finish(body, None);
    }
}
