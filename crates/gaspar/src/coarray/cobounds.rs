//! Codimensions: `x[l1:u1, ..., ln:*]` maps cosubscripts to image numbers, as Fortran's
//! `image_index`, `this_image(x)`, `lcobound` and `ucobound` do (gfortran computes them
//! inline; the Rust API needs them).

use super::error::{CoError, CoResult};
use super::Image;

/// The cobounds of a coarray: lower cobounds of every codimension and upper cobounds of
/// all but the last (which is `*`).
///
/// ```
/// use gaspar::coarray::Cobounds;
/// // x[2, 0:*] on 6 images: cosubscripts (1..=2, 0..=2).
/// let x = Cobounds::new(&[1, 0], &[2])?;
/// assert_eq!(x.image_index(6, &[2, 1]), Some(4));
/// assert_eq!(x.cosubscripts(4)?, [2, 1]);
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cobounds {
    lower: Vec<i64>,
    upper: Vec<i64>,
}

impl Cobounds {
    /// `[lower[0]:upper[0], ..., lower[n-1]:*]`: `upper` has one entry less than `lower`.
    ///
    /// ```
    /// use gaspar::coarray::Cobounds;
    /// let x = Cobounds::new(&[1, 1], &[3])?; // x[3, *]
    /// assert_eq!(x.lcobound(), [1, 1]);
    /// assert!(Cobounds::new(&[1], &[3]).is_err()); // the last upper cobound is *
    /// assert!(Cobounds::new(&[i64::MIN, 1], &[i64::MAX]).is_err()); // 2^64 cosubscripts
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn new(lower: &[i64], upper: &[i64]) -> CoResult<Cobounds> {
        if lower.is_empty() || upper.len() + 1 != lower.len() || lower.len() > 15 {
            return Err(CoError::invalid(
                "cobounds",
                format!("{} lower and {} upper cobounds", lower.len(), upper.len()),
            ));
        }
        if let Some(k) = (0..upper.len()).find(|&k| upper[k] < lower[k]) {
            return Err(CoError::invalid(
                "cobounds",
                format!("codimension {} is empty ({}:{})", k + 1, lower[k], upper[k]),
            ));
        }
        // Every image's cosubscripts must be numbers: the extents and their product fit
        // in an i64, and the last codimension has room for the most images a job has.
        let product = (0..upper.len()).try_fold(1i64, |product, k| {
            upper[k]
                .checked_sub(lower[k])
                .and_then(|e| e.checked_add(1))
                .and_then(|e| product.checked_mul(e))
        });
        let last = lower[lower.len() - 1];
        if product.is_none() || last.checked_add(i64::from(u32::MAX)).is_none() {
            return Err(CoError::invalid(
                "cobounds",
                format!(
                    "the cobounds {lower:?} : {upper:?} span more cosubscripts than an i64 holds"
                ),
            ));
        }
        Ok(Cobounds {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
        })
    }

    /// `[1:*]`, the cobounds of `x[*]`.
    ///
    /// ```
    /// use gaspar::coarray::Cobounds;
    /// let x = Cobounds::star(); // x[*]
    /// assert_eq!(x.image_index(4, &[3]), Some(3));
    /// ```
    pub fn star() -> Cobounds {
        Cobounds {
            lower: vec![1],
            upper: Vec::new(),
        }
    }

    /// Cosubscripts along codimension `k` (one that has an upper cobound): they fit, as
    /// `new` checked.
    fn extent(&self, k: usize) -> i64 {
        self.upper[k] - self.lower[k] + 1
    }

    /// `image_index(x, sub)`: the image of cosubscripts `sub` among `num_images`, or
    /// `None` where Fortran gives 0 (outside the cobounds, or past the last image).
    ///
    /// ```
    /// use gaspar::coarray::Cobounds;
    /// let x = Cobounds::new(&[0, 1], &[1])?; // x[0:1, *]
    /// assert_eq!(x.image_index(4, &[1, 2]), Some(4));
    /// assert_eq!(x.image_index(4, &[1, 3]), None); // past the last image
    /// assert_eq!(x.image_index(4, &[2, 1]), None); // outside the cobounds
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn image_index(&self, num_images: u32, sub: &[i64]) -> Option<Image> {
        if sub.len() != self.lower.len() {
            return None;
        }
        let mut index = 0i64;
        let mut multiplier = 1i64;
        for (k, (&s, &l)) in sub.iter().zip(&self.lower).enumerate() {
            let within = s >= l && (k == self.upper.len() || s <= self.upper[k]);
            if !within {
                return None;
            }
            index = index.checked_add(s.checked_sub(l)?.checked_mul(multiplier)?)?;
            if k < self.upper.len() {
                multiplier = multiplier.checked_mul(self.extent(k))?;
            }
        }
        let image = u32::try_from(index + 1).ok()?;
        (image <= num_images).then_some(image)
    }

    /// `this_image(x)` for image `image`: its cosubscripts (image 0 is no image).
    ///
    /// ```
    /// use gaspar::coarray::Cobounds;
    /// let x = Cobounds::new(&[0, 1], &[1])?; // x[0:1, *]
    /// assert_eq!(x.cosubscripts(1)?, [0, 1]);
    /// assert_eq!(x.cosubscripts(3)?, [0, 2]);
    /// assert!(x.cosubscripts(0).is_err());
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn cosubscripts(&self, image: Image) -> CoResult<Vec<i64>> {
        if image == 0 {
            return Err(CoError::invalid(
                "cosubscripts",
                "image 0: images count from 1",
            ));
        }
        let mut rest = i64::from(image) - 1;
        let mut out = Vec::with_capacity(self.lower.len());
        for k in 0..self.lower.len() {
            if k < self.upper.len() {
                let e = self.extent(k);
                out.push(self.lower[k] + rest % e);
                rest /= e;
            } else {
                out.push(self.lower[k] + rest);
            }
        }
        Ok(out)
    }

    /// `lcobound(x)`.
    ///
    /// ```
    /// use gaspar::coarray::Cobounds;
    /// assert_eq!(Cobounds::star().lcobound(), [1]);
    /// ```
    pub fn lcobound(&self) -> &[i64] {
        &self.lower
    }

    /// `ucobound(x)` with `num_images` images: the last codimension ends where the last
    /// image lies.
    ///
    /// ```
    /// use gaspar::coarray::Cobounds;
    /// let x = Cobounds::new(&[1, 1], &[2])?; // x[2, *]
    /// assert_eq!(x.ucobound(5), [2, 3]);
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn ucobound(&self, num_images: u32) -> Vec<i64> {
        // Fits and is not 0, as `new` checked.
        let per_last: i64 = (0..self.upper.len()).map(|k| self.extent(k)).product();
        let images = i64::from(num_images.max(1));
        let last = self.lower[self.lower.len() - 1] + (images - 1) / per_last;
        let mut out = self.upper.clone();
        out.push(last);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_index_and_cosubscripts_invert_each_other() {
        // x[2, 3, *] on 14 images.
        let c = Cobounds::new(&[1, 1, 1], &[2, 3]).unwrap();
        assert_eq!(c.image_index(14, &[1, 1, 1]), Some(1));
        assert_eq!(c.image_index(14, &[2, 1, 1]), Some(2));
        assert_eq!(c.image_index(14, &[1, 2, 1]), Some(3));
        assert_eq!(c.image_index(14, &[2, 1, 3]), Some(14));
        assert_eq!(c.image_index(14, &[1, 2, 3]), None, "image 15 of 14");
        assert_eq!(c.image_index(14, &[3, 1, 1]), None, "outside 1:2");
        assert_eq!(c.image_index(14, &[1, 1]), None, "corank");
        for image in 1..=14 {
            assert_eq!(
                c.image_index(14, &c.cosubscripts(image).unwrap()),
                Some(image)
            );
        }
        assert_eq!(c.ucobound(14), [2, 3, 3]);
        assert_eq!(c.lcobound(), [1, 1, 1]);
        // x[0:1, -1:*]
        let d = Cobounds::new(&[0, -1], &[1]).unwrap();
        assert_eq!(d.cosubscripts(4).unwrap(), [1, 0]);
        assert_eq!(d.image_index(4, &[1, 0]), Some(4));
        assert_eq!(Cobounds::star().image_index(3, &[3]), Some(3));
        assert!(Cobounds::new(&[1, 1], &[]).is_err());
        assert!(Cobounds::new(&[2, 1], &[1]).is_err());
        // Cobounds whose cosubscripts an i64 cannot number are refused; a coindex's
        // difference from its cobound that overflows is no image.
        assert!(Cobounds::new(&[1, 1, 1], &[1 << 40, 1 << 40]).is_err());
        assert!(Cobounds::new(&[i64::MAX], &[]).is_err());
        let e = Cobounds::new(&[-1], &[]).unwrap();
        assert_eq!(e.image_index(4, &[i64::MAX]), None);
        assert_eq!(e.ucobound(0), [-1]);
    }
}
