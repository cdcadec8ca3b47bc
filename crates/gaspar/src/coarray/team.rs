//! The current team: which ranks of the job are its images, in image order. Every image
//! number the engine receives goes through it, so that teams (form/change/end team) can
//! replace it without touching the statements.

use super::error::{CoError, CoResult};
use super::Image;

/// The images of a team: `ranks[i - 1]` is the job rank of image `i`.
#[derive(Debug, Clone)]
pub(crate) struct Team {
    ranks: Vec<u32>,
    this_image: Image,
}

impl Team {
    /// The initial team: image `r + 1` is rank `r`.
    pub(crate) fn initial(rank: u32, procs: u32) -> Team {
        Team {
            ranks: (0..procs).collect(),
            this_image: rank + 1,
        }
    }

    /// A team whose image `i` is job rank `ranks[i - 1]`, seen from image `this_image`.
    pub(crate) fn of_ranks(ranks: Vec<u32>, this_image: Image) -> Team {
        Team { ranks, this_image }
    }

    /// This image's number in the team.
    pub(crate) fn this_image(&self) -> Image {
        self.this_image
    }

    /// Images in the team.
    pub(crate) fn num_images(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// The job rank of `image`, or [`CoError::ImageOutOfRange`].
    pub(crate) fn rank_of(&self, image: Image) -> CoResult<u32> {
        let index = usize::try_from(image).ok().and_then(|i| i.checked_sub(1));
        index
            .and_then(|i| self.ranks.get(i).copied())
            .ok_or(CoError::ImageOutOfRange {
                image: image.into(),
                num_images: self.num_images(),
            })
    }

    /// The job ranks of the team, in image order.
    #[inline]
    pub(crate) fn ranks(&self) -> &[u32] {
        &self.ranks
    }

    /// The image number of job rank `rank`, if it is in the team.
    pub(crate) fn image_of(&self, rank: u32) -> Option<Image> {
        self.ranks
            .iter()
            .position(|&r| r == rank)
            .map(|i| i as Image + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_one_based_and_checked() {
        let t = Team::initial(2, 4);
        assert_eq!((t.this_image(), t.num_images()), (3, 4));
        assert_eq!(t.rank_of(1).unwrap(), 0);
        assert_eq!(t.rank_of(4).unwrap(), 3);
        assert!(matches!(
            t.rank_of(0),
            Err(CoError::ImageOutOfRange {
                image: 0,
                num_images: 4
            })
        ));
        assert!(t.rank_of(5).is_err());
        assert_eq!(t.image_of(3), Some(4));
    }
}
