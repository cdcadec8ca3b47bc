//! Requests to another image's service thread and its replies, as bytes: each message is
//! its length (8 bytes) followed by fields (integers little-endian, byte strings and
//! optional values prefixed by their length or presence).

use std::io::{Read, Write};

use crate::error::CafError;

/// What the caller asks the owner to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// A getter, into a scalar of this many bytes or an array shaped by this descriptor.
    Get {
        /// Bytes of a scalar destination.
        scalar_bytes: u64,
        /// The destination's descriptor (arrays).
        dst_desc: Option<Vec<u8>>,
    },
    /// A receiver, from these elements (contiguous) and, for an array, their descriptor.
    Send {
        /// The elements.
        data: Vec<u8>,
        /// Their descriptor (arrays).
        src_desc: Option<Vec<u8>>,
    },
    /// A presence test (`by_reference`: see `owner::present`).
    Present {
        /// A coarray without descriptor is passed by the address of its address.
        by_reference: bool,
    },
}

/// Where on the owner: the part's global address and a byte offset in it; a global
/// address of 0 makes the offset an address in the owner's process (an accessor's
/// additional data, for its calls back to the image that made the access).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartAt {
    /// The global address of the owner's part (0: none, `offset` is an address).
    pub(crate) ga_bits: u64,
    /// Bytes from the part's start (a view of part of a coarray).
    pub(crate) offset: u64,
}

/// One accessor call on the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// The accessor's index.
    pub(crate) index: i32,
    /// The image index of the access.
    pub(crate) image: i32,
    /// The memory the accessor works on.
    pub(crate) part: PartAt,
    /// The coarray's descriptor (allocatable coarrays).
    pub(crate) coarray_desc: Option<Vec<u8>>,
    /// The accessor's additional data.
    pub(crate) add_data: Vec<u8>,
    /// The caller's job rank and its address of the additional data (for the accessor's
    /// calls back to the caller).
    pub(crate) origin: (u32, u64),
    /// Destination character length.
    pub(crate) dst_charlen: Option<u64>,
    /// Source character length.
    pub(crate) src_charlen: Option<u64>,
    /// The call.
    pub(crate) op: Op,
}

/// The owner's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// A getter's result.
    Fetched {
        /// The elements read.
        data: Vec<u8>,
        /// The descriptor the getter filled (arrays).
        desc: Option<Vec<u8>>,
        /// The destination character length after the call.
        dst_charlen: Option<u64>,
    },
    /// A receiver ran.
    Sent,
    /// A presence test's result.
    Present(i32),
    /// The owner could not run the accessor.
    Failed(String),
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn opt_u64(&mut self, v: Option<u64>) {
        self.u64(u64::from(v.is_some()));
        self.u64(v.unwrap_or(0));
    }
    fn opt_bytes(&mut self, v: &Option<Vec<u8>>) {
        self.u64(u64::from(v.is_some()));
        self.bytes(v.as_deref().unwrap_or(&[]));
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u64(&mut self) -> Result<u64, CafError> {
        if self.0.len() < 8 {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(8);
        self.0 = rest;
        Ok(u64::from_le_bytes(head.try_into().expect("8 bytes")))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, CafError> {
        let len = usize::try_from(self.u64()?).map_err(|_| malformed())?;
        if self.0.len() < len {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head.to_vec())
    }
    fn opt_u64(&mut self) -> Result<Option<u64>, CafError> {
        let present = self.u64()? != 0;
        let v = self.u64()?;
        Ok(present.then_some(v))
    }
    fn opt_bytes(&mut self) -> Result<Option<Vec<u8>>, CafError> {
        let present = self.u64()? != 0;
        let v = self.bytes()?;
        Ok(present.then_some(v))
    }
}

fn malformed() -> CafError {
    CafError::Argument("malformed accessor message".into())
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u64(self.index as u32 as u64);
        w.u64(self.image as u32 as u64);
        w.u64(self.part.ga_bits);
        w.u64(self.part.offset);
        w.opt_bytes(&self.coarray_desc);
        w.bytes(&self.add_data);
        w.u64(u64::from(self.origin.0));
        w.u64(self.origin.1);
        w.opt_u64(self.dst_charlen);
        w.opt_u64(self.src_charlen);
        match &self.op {
            Op::Get {
                scalar_bytes,
                dst_desc,
            } => {
                w.u64(1);
                w.u64(*scalar_bytes);
                w.opt_bytes(dst_desc);
            }
            Op::Send { data, src_desc } => {
                w.u64(2);
                w.bytes(data);
                w.opt_bytes(src_desc);
            }
            Op::Present { by_reference } => {
                w.u64(3);
                w.u64(u64::from(*by_reference));
            }
        }
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Request, CafError> {
        let mut r = Reader(bytes);
        let index = r.u64()? as u32 as i32;
        let image = r.u64()? as u32 as i32;
        let part = PartAt {
            ga_bits: r.u64()?,
            offset: r.u64()?,
        };
        let coarray_desc = r.opt_bytes()?;
        let add_data = r.bytes()?;
        let origin = (r.u64()? as u32, r.u64()?);
        let dst_charlen = r.opt_u64()?;
        let src_charlen = r.opt_u64()?;
        let op = match r.u64()? {
            1 => Op::Get {
                scalar_bytes: r.u64()?,
                dst_desc: r.opt_bytes()?,
            },
            2 => Op::Send {
                data: r.bytes()?,
                src_desc: r.opt_bytes()?,
            },
            3 => Op::Present {
                by_reference: r.u64()? != 0,
            },
            _ => return Err(malformed()),
        };
        Ok(Request {
            index,
            image,
            part,
            coarray_desc,
            add_data,
            origin,
            dst_charlen,
            src_charlen,
            op,
        })
    }
}

impl Reply {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Reply::Fetched {
                data,
                desc,
                dst_charlen,
            } => {
                w.u64(1);
                w.bytes(data);
                w.opt_bytes(desc);
                w.opt_u64(*dst_charlen);
            }
            Reply::Sent => w.u64(2),
            Reply::Present(v) => {
                w.u64(3);
                w.u64(*v as u32 as u64);
            }
            Reply::Failed(why) => {
                w.u64(4);
                w.bytes(why.as_bytes());
            }
        }
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Reply, CafError> {
        let mut r = Reader(bytes);
        Ok(match r.u64()? {
            1 => Reply::Fetched {
                data: r.bytes()?,
                desc: r.opt_bytes()?,
                dst_charlen: r.opt_u64()?,
            },
            2 => Reply::Sent,
            3 => Reply::Present(r.u64()? as u32 as i32),
            4 => Reply::Failed(String::from_utf8_lossy(&r.bytes()?).into_owned()),
            _ => return Err(malformed()),
        })
    }
}

fn write_frame(stream: &mut impl Write, body: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(8 + body.len());
    frame.extend_from_slice(&(body.len() as u64).to_le_bytes());
    frame.extend_from_slice(body);
    stream.write_all(&frame)
}

fn read_frame(stream: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 8];
    stream.read_exact(&mut len)?;
    let mut body = vec![0u8; u64::from_le_bytes(len) as usize];
    stream.read_exact(&mut body)?;
    Ok(body)
}

/// Sends a request.
pub(crate) fn send_request(stream: &mut impl Write, request: &Request) -> std::io::Result<()> {
    write_frame(stream, &request.encode())
}

/// Receives a request; `Ok(None)` when the caller closed the connection.
pub(crate) fn receive_request(stream: &mut impl Read) -> Result<Option<Request>, CafError> {
    match read_frame(stream) {
        Ok(body) => Request::decode(&body).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(CafError::Argument(format!("accessor request: {e}"))),
    }
}

/// Sends a reply.
pub(crate) fn send_reply(stream: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    write_frame(stream, &reply.encode())
}

/// Receives a reply.
pub(crate) fn receive_reply(stream: &mut impl Read) -> std::io::Result<Result<Reply, CafError>> {
    read_frame(stream).map(|body| Reply::decode(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_survive_the_wire() {
        let request = Request {
            index: 3,
            image: -1,
            part: PartAt {
                ga_bits: u64::MAX - 5,
                offset: 24,
            },
            coarray_desc: Some(vec![1, 2, 3]),
            add_data: vec![9; 17],
            origin: (3, 0x1000),
            dst_charlen: Some(4),
            src_charlen: None,
            op: Op::Send {
                data: vec![7; 12],
                src_desc: None,
            },
        };
        let mut buf = Vec::new();
        send_request(&mut buf, &request).unwrap();
        let got = receive_request(&mut buf.as_slice()).unwrap().unwrap();
        assert_eq!(got, request);
        let reply = Reply::Fetched {
            data: vec![1, 2],
            desc: None,
            dst_charlen: Some(8),
        };
        let mut buf = Vec::new();
        send_reply(&mut buf, &reply).unwrap();
        assert_eq!(receive_reply(&mut buf.as_slice()).unwrap().unwrap(), reply);
        assert!(receive_request(&mut [].as_slice()).unwrap().is_none());
    }
}
