//! Strided and I/O-vector transfers against a reference copy, in every method and case.
//! The target is this rank's symmetric heap, reached through the same shared mapping as
//! any other rank's.

use std::sync::Mutex;

use gaspar::strided::{Descriptor, Method, Policy, Side};
use gaspar::{Error, GlobalAddr, GlobalPtr, Handle};
use proptest::prelude::*;

static RUNTIME: Mutex<()> = Mutex::new(());

const REGION: u64 = 1 << 20;

fn with_runtime<R>(f: impl FnOnce(&mut gaspar::strided::Strided, GlobalAddr) -> R) -> R {
    let _turn = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut rt = gaspar::init().expect("init").into_acp();
    let block = rt.alloc(REGION).unwrap();
    let result = f(&mut rt, block.ga(0).unwrap());
    rt.free(block).unwrap();
    rt.finalize().unwrap();
    result
}

/// Every (source offset, destination offset) of the descriptor's lowest-level blocks.
fn blocks(count: &[u64], src: &[u64], dst: &[u64]) -> Vec<(u64, u64)> {
    let mut out = vec![(0u64, 0u64)];
    for k in 1..count.len() {
        out = out
            .iter()
            .flat_map(|&(s, d)| {
                (0..count[k]).map(move |i| (s + i * src[k - 1], d + i * dst[k - 1]))
            })
            .collect();
    }
    out
}

fn reference(count: &[u64], src_strides: &[u64], dst_strides: &[u64], src: &[u8], dst: &mut [u8]) {
    let n = count[0] as usize;
    for (s, d) in blocks(count, src_strides, dst_strides) {
        let (s, d) = (s as usize, d as usize);
        dst[d..d + n].copy_from_slice(&src[s..s + n]);
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 * 31 + seed as u32 * 7) as u8)
        .collect()
}

/// A random descriptor: counts, source strides (any, even overlapping) and destination
/// strides that never overlap (each at least the extent below it, plus a random gap).
fn descriptor() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<u64>)> {
    (1usize..=7).prop_flat_map(|levels| {
        (
            1u64..=40,
            proptest::collection::vec(1u64..=4, levels - 1),
            proptest::collection::vec((0u64..3, 0u64..24), levels - 1),
            proptest::collection::vec((0u64..3, 0u64..24), levels - 1),
        )
            .prop_map(|(bytes, counts, src_gaps, dst_gaps)| {
                let mut count = vec![bytes];
                count.extend(&counts);
                let strides = |gaps: &[(u64, u64)], allow_overlap: bool| {
                    let mut extent = bytes;
                    let mut out = Vec::new();
                    for (k, &(kind, gap)) in gaps.iter().enumerate() {
                        // kind 0: contiguous (mergeable); 1: gap; 2: (source only) overlap
                        let stride = match kind {
                            0 => extent,
                            2 if allow_overlap => (extent / 2).max(1),
                            _ => extent + gap,
                        };
                        out.push(stride);
                        extent += stride * (count[k + 1] - 1);
                    }
                    out
                };
                (
                    count.clone(),
                    strides(&src_gaps, true),
                    strides(&dst_gaps, false),
                )
            })
    })
}

fn extent(count: &[u64], strides: &[u64]) -> u64 {
    count[0]
        + strides
            .iter()
            .zip(&count[1..])
            .map(|(s, c)| s * (c - 1))
            .sum::<u64>()
}

fn policies() -> Vec<(Policy, u64)> {
    vec![
        (Policy::Auto, 400 << 10),
        (Policy::Direct, 400 << 10),
        (Policy::Buffered, 400 << 10),
        (Policy::Buffered, 24),
        (Policy::Buffered, 7),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Put and get of random shapes (1 to 7 stride levels) at random offsets, under every
    /// policy and several buffer sizes, match a reference local copy byte for byte.
    #[test]
    fn strided_transfers_match_a_reference_copy((count, src_strides, dst_strides) in descriptor(), remote_at in 0u64..4096, local_at in 0u64..64) {
        with_runtime(|rt, heap| {
            let desc = Descriptor::new(&count, &src_strides, &dst_strides).unwrap();
            let src_len = (local_at + extent(&count, &src_strides)) as usize;
            let dst_len = (remote_at + extent(&count, &dst_strides)) as usize;
            prop_assume!(dst_len as u64 <= REGION);
            prop_assume!(remote_at + extent(&count, &src_strides) <= REGION);
            let remote = heap.offset(remote_at).unwrap();
            for (policy, buffer) in policies() {
                rt.set_policy(policy, buffer);
                // Put: local source -> remote destination.
                let src = pattern(src_len, 1);
                let before = pattern(dst_len - remote_at as usize, 2);
                rt.put(remote, &before, Handle::NULL).unwrap();
                let h = rt.put_strided(&src[local_at as usize..], &desc, remote, Handle::NULL).unwrap();
                rt.complete(h).unwrap();
                let mut got = vec![0u8; before.len()];
                rt.get(&mut got, remote, Handle::NULL).unwrap();
                let mut expected = before.clone();
                reference(&count, &src_strides, &dst_strides, &src[local_at as usize..], &mut expected);
                prop_assert_eq!(&got, &expected, "put under {:?}/{}", policy, buffer);

                // Get: remote source (source strides, may overlap) -> local destination.
                let remote_src = pattern(extent(&count, &src_strides) as usize, 3);
                rt.put(remote, &remote_src, Handle::NULL).unwrap();
                let mut local = pattern(local_at as usize + extent(&count, &dst_strides) as usize, 4);
                let mut expected = local.clone();
                rt.get_strided(&mut local[local_at as usize..], &desc, remote, Handle::NULL).unwrap();
                reference(&count, &src_strides, &dst_strides, &remote_src, &mut expected[local_at as usize..]);
                prop_assert_eq!(&local, &expected, "get under {:?}/{}", policy, buffer);
            }
            Ok(())
        })?;
    }
}

/// (count, local strides, remote strides, expected case)
type Case = (&'static [u64], &'static [u64], &'static [u64], u8);

/// Shapes that fall into each case of the XMP table, with a 1 KiB buffer.
#[test]
fn each_buffering_case_moves_the_right_bytes() {
    with_runtime(|rt, heap| {
        rt.set_policy(Policy::Buffered, 1024);
        // (count, local strides, remote strides, expected case for a put)
        let cases: [Case; 4] = [
            // 1: N_R = 256 <= B, N_R <= N_L (local contiguous 2 KiB)
            (&[256, 8], &[256], &[512], 1),
            // 2: N_L = 16 < N_R = 512 <= B
            (&[16, 32], &[64], &[16], 2),
            // 3: N_L = 48 < B < N_R = 4800
            (&[48, 100], &[100], &[48], 3),
            // 4: B < N_R = 4096 and B <= N_L = 8192
            (&[4096, 2], &[4096], &[4096], 4),
        ];
        for (count, local, remote, case) in cases {
            let desc = Descriptor::new(count, local, remote).unwrap();
            match rt.plan(&desc, Side::Src) {
                Method::Buffered { case: c, .. } => assert_eq!(c, case, "{count:?}"),
                other => panic!("{other:?}"),
            }
            let src = pattern(extent(count, local) as usize, 9);
            let remote_len = extent(count, remote) as usize;
            rt.put(heap, &vec![0u8; remote_len], Handle::NULL).unwrap();
            rt.put_strided(&src, &desc, heap, Handle::NULL).unwrap();
            let mut got = vec![0u8; remote_len];
            rt.get(&mut got, heap, Handle::NULL).unwrap();
            let mut expected = vec![0u8; remote_len];
            reference(count, local, remote, &src, &mut expected);
            assert_eq!(got, expected, "put case {case}");
            // The same shape as a get: remote side is the source.
            let get_desc = Descriptor::new(count, remote, local).unwrap();
            match rt.plan(&get_desc, Side::Dst) {
                Method::Buffered { case: c, .. } => assert_eq!(c, case, "get {count:?}"),
                other => panic!("{other:?}"),
            }
            let mut back = vec![0u8; src.len()];
            rt.get_strided(&mut back, &get_desc, heap, Handle::NULL)
                .unwrap();
            let mut expected_back = vec![0u8; src.len()];
            reference(count, remote, local, &got, &mut expected_back);
            assert_eq!(back, expected_back, "get case {case}");
        }
    });
}

#[test]
fn counts_past_the_segment_are_refused_before_anything_is_written() {
    with_runtime(|rt, heap| {
        // The last 128 bytes of the heap (local blocks come from its top).
        let top = rt.alloc_local(128).unwrap();
        assert_eq!(top.heap_offset(), rt.heap_len() - 128);
        let near_end = top.ga().offset(28).unwrap();
        rt.put(near_end, &[7u8; 100], Handle::NULL).unwrap();
        // 4 rows of 64 bytes, 64 apart: 256 bytes from 100 before the end.
        let desc = Descriptor::new(&[64, 4], &[64], &[64]).unwrap();
        let src = vec![1u8; 256];
        assert!(matches!(
            rt.put_strided(&src, &desc, near_end, Handle::NULL),
            Err(Error::OutOfBounds { .. })
        ));
        let mut got = [0u8; 100];
        rt.get(&mut got, near_end, Handle::NULL).unwrap();
        assert_eq!(got, [7u8; 100], "a refused transfer wrote something");
        // Source larger than the local buffer.
        assert!(matches!(
            rt.put_strided(&src[..200], &desc, heap, Handle::NULL),
            Err(Error::InvalidArgument { .. })
        ));
        let mut small = vec![0u8; 100];
        assert!(matches!(
            rt.get_strided(&mut small, &desc, heap, Handle::NULL),
            Err(Error::InvalidArgument { .. })
        ));
        // I/O vector: mismatched lengths, and a segment past the end.
        assert!(rt
            .put_vector(&src, &[0, 8], heap, &[0], 8, Handle::NULL)
            .is_err());
        assert!(matches!(
            rt.put_vector(&src, &[0], near_end, &[96], 8, Handle::NULL),
            Err(Error::OutOfBounds { .. })
        ));
        rt.free_local(top).unwrap();
    });
}

#[test]
fn io_vector_of_1000_segments() {
    with_runtime(|rt, heap| {
        let src = pattern(8000, 5);
        let local: Vec<u64> = (0..1000).map(|i| i * 8).collect();
        let remote: Vec<u64> = (0..1000).map(|i| (999 - i) * 24).collect();
        rt.put_vector(&src, &local, heap, &remote, 8, Handle::NULL)
            .unwrap();
        let mut back = vec![0u8; 8000];
        rt.get_vector(&mut back, &local, heap, &remote, 8, Handle::NULL)
            .unwrap();
        assert_eq!(back, src);
        let mut raw = vec![0u8; 8];
        rt.get(&mut raw, heap.offset(999 * 24).unwrap(), Handle::NULL)
            .unwrap();
        assert_eq!(raw, src[..8]);
    });
}

#[test]
fn typed_sections_of_a_3d_array() {
    with_runtime(|rt, heap| {
        // A 4x4x4 sub-cube of an 8x8x8 array of f64, from a packed local cube.
        let cube: Vec<f64> = (0..64).map(|i| i as f64).collect();
        let target = GlobalPtr::<f64>::new(heap);
        rt.put(heap, &vec![0u8; 512 * 8], Handle::NULL).unwrap();
        let corner = target.add(1 + 8 + 64).unwrap();
        rt.put_section(&cube, [1, 4, 16], [4, 4, 4], corner, [1, 8, 64])
            .unwrap();
        let mut whole = vec![0f64; 512];
        target.get_slice(rt, &mut whole).unwrap();
        for (z, y, x) in
            (0..4).flat_map(|z| (0..4).flat_map(move |y| (0..4).map(move |x| (z, y, x))))
        {
            assert_eq!(
                whole[(z + 1) * 64 + (y + 1) * 8 + x + 1],
                (z * 16 + y * 4 + x) as f64
            );
        }
        assert_eq!(whole[0], 0.0);
        let mut back = vec![0f64; 64];
        rt.get_section(&mut back, [1, 4, 16], [4, 4, 4], corner, [1, 8, 64])
            .unwrap();
        assert_eq!(back, cube);
        // A section that does not fit the local slice is an error, not a panic.
        assert!(rt
            .put_section(&cube[..10], [1, 4, 16], [4, 4, 4], corner, [1, 8, 64])
            .is_err());
    });
}

#[test]
fn accumulate_adds_scaled_values_through_a_strided_shape() {
    use gaspar::strided::AccKind;
    with_runtime(|rt, heap| {
        let target = GlobalPtr::<f64>::new(heap);
        target.put_slice(rt, &[1.0; 16]).unwrap();
        // 4 rows of 2 doubles, every other pair of the remote array.
        let desc = Descriptor::new(&[16, 4], &[16], &[32]).unwrap();
        let src: Vec<f64> = (0..8).map(f64::from).collect();
        rt.acc_strided(
            AccKind::Double,
            &2f64.to_ne_bytes(),
            bytemuck::cast_slice(&src),
            &desc,
            heap,
            Handle::NULL,
        )
        .unwrap();
        let mut got = [0f64; 16];
        target.get_slice(rt, &mut got).unwrap();
        let expected = [
            1., 3., 1., 1., 5., 7., 1., 1., 9., 11., 1., 1., 13., 15., 1., 1.,
        ];
        assert_eq!(got, expected);
        // A run that is not a whole number of elements, and a wrong scale size.
        let odd = Descriptor::new(&[12, 2], &[12], &[16]).unwrap();
        assert!(rt
            .acc_strided(
                AccKind::Double,
                &2f64.to_ne_bytes(),
                &[0u8; 32],
                &odd,
                heap,
                Handle::NULL
            )
            .is_err());
        assert!(rt
            .acc_strided(
                AccKind::Double,
                &[0u8; 4],
                bytemuck::cast_slice(&src),
                &desc,
                heap,
                Handle::NULL
            )
            .is_err());
    });
}

#[test]
fn strided_transfers_reach_registered_memory() {
    with_runtime(|rt, _heap| {
        let mut target = vec![0u8; 1024].into_boxed_slice();
        let base = target.as_mut_ptr();
        // SAFETY: `target` outlives the registration and is only accessed through gaspar
        // while registered.
        let key = unsafe { rt.register(base, 1024, 0) }.unwrap();
        let ga = rt.ga(key, base).unwrap();
        let count = [8u64, 16];
        let desc = Descriptor::new(&count, &[8], &[64]).unwrap();
        let src = pattern(128, 3);
        rt.set_policy(Policy::Direct, 1 << 20);
        rt.put_strided(&src, &desc, ga, Handle::NULL).unwrap();
        let mut got = vec![0u8; 1024];
        rt.get(&mut got, ga, Handle::NULL).unwrap();
        let mut expected = vec![0u8; 1024];
        reference(&count, &[8], &[64], &src, &mut expected);
        assert_eq!(got, expected);
        let mut back = vec![0u8; 128];
        let back_desc = Descriptor::new(&count, &[64], &[8]).unwrap();
        rt.get_strided(&mut back, &back_desc, ga, Handle::NULL)
            .unwrap();
        assert_eq!(back, src);
        // Past the registered region: refused before anything is written.
        let long = Descriptor::new(&[8, 17], &[8], &[64]).unwrap();
        assert!(rt
            .put_strided(&pattern(136, 1), &long, ga, Handle::NULL)
            .is_err());
        rt.unregister(key).unwrap();
        drop(target);
    });
}

/// 2-D and 3-D sections at every chunk width the copy engine treats apart (the fixed
/// widths 8, 16, 32 and 64 and their neighbours, the table's sizes above 64), at aligned
/// and odd offsets, put and got directly, match the reference copy.
#[test]
fn sections_of_every_chunk_width_match_a_reference_copy() {
    with_runtime(|rt, heap| {
        rt.set_policy(Policy::Direct, 400 << 10);
        for chunk in [
            1u64, 4, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 128, 256, 1000, 4096,
        ] {
            for (count, local, remote) in [
                (vec![chunk, 9], vec![chunk + 3], vec![2 * chunk + 64]),
                (
                    vec![chunk, 3, 4],
                    vec![chunk, 3 * chunk + 5],
                    vec![chunk + 8, 4 * chunk + 80],
                ),
            ] {
                for (local_at, remote_at) in [(0usize, 0u64), (1, 4095), (13, 64)] {
                    let desc = Descriptor::new(&count, &local, &remote).unwrap();
                    let local_len = local_at + extent(&count, &local) as usize;
                    let remote_len = extent(&count, &remote) as usize;
                    let target = heap.offset(remote_at).unwrap();
                    // Put.
                    let src = pattern(local_len, 5);
                    let before = pattern(remote_len, 6);
                    rt.put(target, &before, Handle::NULL).unwrap();
                    let h = rt
                        .put_strided(&src[local_at..], &desc, target, Handle::NULL)
                        .unwrap();
                    rt.complete(h).unwrap();
                    let mut got = vec![0u8; remote_len];
                    rt.get(&mut got, target, Handle::NULL).unwrap();
                    let mut expected = before.clone();
                    reference(&count, &local, &remote, &src[local_at..], &mut expected);
                    assert_eq!(got, expected, "put {count:?} at {local_at}/{remote_at}");
                    // Get (the descriptor read from the remote side: remote strides are
                    // the source's).
                    let back = Descriptor::new(&count, &remote, &local).unwrap();
                    let mut dst = pattern(local_len, 7);
                    let mut expected = dst.clone();
                    rt.get_strided(&mut dst[local_at..], &back, target, Handle::NULL)
                        .unwrap();
                    reference(&count, &remote, &local, &got, &mut expected[local_at..]);
                    assert_eq!(dst, expected, "get {count:?} at {local_at}/{remote_at}");
                }
            }
        }
    });
}
