//! A minimal HTTP/1.1 keep-alive client for load generators that share the machine with
//! what they measure: one connection, the request written as bytes, the response's head
//! parsed by `httparse` and its body read by `Content-Length`. A general client (reqwest)
//! spent about a fifth of this box's two cores generating the HTTP bench's load, time the
//! gateway and Postgres under test did not get.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One keep-alive connection to `addr`.
pub struct Connection {
    stream: TcpStream,
    host: String,
    request: Vec<u8>,
    buffer: Vec<u8>,
}

/// A response: its status and body (headers are not kept).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Connection {
    pub async fn open(addr: SocketAddr) -> std::io::Result<Connection> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream,
            host: addr.to_string(),
            request: Vec::with_capacity(1024),
            buffer: Vec::with_capacity(4096),
        })
    }

    /// POST `body` to `path` with `headers` (name, value) and read the whole response.
    /// Fails on a response this client does not read: one without `Content-Length`
    /// (chunked or streamed) or a closed connection.
    pub async fn post(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> anyhow::Result<Response> {
        use std::io::Write;
        self.request.clear();
        write!(
            self.request,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        )?;
        for (name, value) in headers {
            write!(self.request, "{name}: {value}\r\n")?;
        }
        self.request.extend_from_slice(b"\r\n");
        self.request.extend_from_slice(body);
        self.stream.write_all(&self.request).await?;
        self.read_response().await
    }

    async fn read_response(&mut self) -> anyhow::Result<Response> {
        self.buffer.clear();
        let (status, head_len, content_length) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head_len) = parsed.parse(&self.buffer)? {
                let status = parsed.code.unwrap_or(0);
                let length = parsed
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .map(|h| std::str::from_utf8(h.value).map(str::parse::<usize>))
                    .ok_or_else(|| {
                        anyhow::anyhow!("HTTP {status} without Content-Length (a streamed answer)")
                    })???;
                break (status, head_len, length);
            }
            self.fill().await?;
        };
        while self.buffer.len() < head_len + content_length {
            self.fill().await?;
        }
        anyhow::ensure!(
            self.buffer.len() == head_len + content_length,
            "more bytes than one response: the server answered what was not asked"
        );
        Ok(Response {
            status,
            body: self.buffer[head_len..].to_vec(),
        })
    }

    async fn fill(&mut self) -> anyhow::Result<()> {
        self.buffer.reserve(4096);
        let n = self.stream.read_buf(&mut self.buffer).await?;
        anyhow::ensure!(n > 0, "the server closed the connection");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A server on one connection that answers each request head it reads with the next
    /// of `answers`, in two writes.
    async fn serve(answers: Vec<&'static [u8]>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            for answer in answers {
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    let mut b = [0u8; 1024];
                    let n = socket.read(&mut b).await.unwrap();
                    seen.extend_from_slice(&b[..n]);
                }
                // Split the answer so the client must read more than once.
                let (head, tail) = answer.split_at(answer.len() / 2);
                socket.write_all(head).await.unwrap();
                socket.flush().await.unwrap();
                tokio::task::yield_now().await;
                socket.write_all(tail).await.unwrap();
            }
        });
        addr
    }

    #[tokio::test]
    async fn reads_responses_in_turn_on_one_connection() {
        let addr = serve(vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!",
        ])
        .await;
        let mut c = Connection::open(addr).await.unwrap();
        let first = c.post("/mcp", &[("a", "b")], b"{}").await.unwrap();
        assert_eq!((first.status, first.body.as_slice()), (200, &b"{}"[..]));
        let second = c.post("/mcp", &[], b"x").await.unwrap();
        assert_eq!(
            (second.status, second.body.as_slice()),
            (404, &b"nope!"[..])
        );
    }

    #[tokio::test]
    async fn refuses_a_response_without_a_length() {
        let addr = serve(vec![
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
        ])
        .await;
        let mut c = Connection::open(addr).await.unwrap();
        let err = c.post("/mcp", &[], b"{}").await.unwrap_err();
        assert!(err.to_string().contains("without Content-Length"), "{err}");
    }
}
