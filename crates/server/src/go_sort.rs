//! Go's `sort.Sort` (pattern-defeating quicksort, the implementation of Go 1.19 and later),
//! step for step, so that elements the order calls equal end up where Go puts them.
//!
//! Go's sort is not stable, and which of two equal elements comes first depends on the
//! algorithm's every step: Helm sorts a repository's tags with it (`1.0.0` and `1.0.0+build.1`
//! have the same precedence) and takes the first, so [`crate::versions::helm_latest`] must sort
//! exactly as Go does to name the same tag. Indices are `isize`, as Go's `int`, so the
//! arithmetic reads as Go's; `less` and `swap` ignore an index outside the slice (none is
//! reached) rather than panic.

/// Sorts `items` in place as Go's `sort.Sort` sorts a `sort.Interface` whose `Less(i, j)` is
/// `less(&items[i], &items[j])`.
pub fn sort<T>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = items.len() as isize;
    if n <= 1 {
        return;
    }
    let mut data = Data { items, less };
    let limit = bit_len(n as usize) as isize;
    data.pdqsort(0, n, limit);
}

/// The number of bits needed to write `n` (Go's `bits.Len`).
fn bit_len(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

/// Go's xorshift generator: the "random" element swaps that break patterns are a fixed
/// function of the length.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The slice and its order, as Go's `sort.Interface`.
struct Data<'a, T, F> {
    items: &'a mut [T],
    less: F,
}

impl<T, F: Fn(&T, &T) -> bool> Data<'_, T, F> {
    fn less(&self, i: isize, j: isize) -> bool {
        let item = |k: isize| usize::try_from(k).ok().and_then(|k| self.items.get(k));
        match (item(i), item(j)) {
            (Some(a), Some(b)) => (self.less)(a, b),
            _ => false,
        }
    }

    fn swap(&mut self, i: isize, j: isize) {
        let len = self.items.len();
        if let (Ok(i), Ok(j)) = (usize::try_from(i), usize::try_from(j))
            && i < len
            && j < len
        {
            self.items.swap(i, j);
        }
    }

    fn insertion_sort(&mut self, a: isize, b: isize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(&mut self, lo: isize, hi: isize, first: isize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                return;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: isize, b: isize) {
        let (first, lo, hi) = (a, 0, b - a);
        let mut i = (hi - 1) / 2;
        while i >= 0 {
            self.sift_down(i, hi, first);
            i -= 1;
        }
        let mut i = hi - 1;
        while i >= 0 {
            self.swap(first, first + i);
            self.sift_down(lo, i, first);
            i -= 1;
        }
    }

    fn pdqsort(&mut self, mut a: isize, mut b: isize, mut limit: isize) {
        const MAX_INSERTION: isize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == Hint::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == Hint::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already_partitioned) = self.partition(a, b, pivot);
            was_partitioned = already_partitioned;
            let (left, right) = (mid - a, b - mid);
            let balance_threshold = length / 8;
            if left < right {
                was_balanced = left >= balance_threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= balance_threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn partition(&mut self, a: isize, b: isize, pivot: isize) -> (isize, bool) {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        while i <= j && self.less(i, a) {
            i += 1;
        }
        while i <= j && !self.less(j, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j, a);
            return (j, true);
        }
        self.swap(i, j);
        let (_, j) = self.sweep(i + 1, j - 1, |s, i| s.less(i, a), |s, j| !s.less(j, a));
        self.swap(j, a);
        (j, false)
    }

    fn partition_equal(&mut self, a: isize, b: isize, pivot: isize) -> isize {
        self.swap(a, pivot);
        let (i, _) = self.sweep(a + 1, b - 1, |s, i| !s.less(a, i), |s, j| s.less(a, j));
        i
    }

    /// The loop Go's `partition` and `partitionEqual` share: `i` moves right while `left(i)`,
    /// `j` left while `right(j)`, and the pair they stop at is swapped, until they cross.
    /// Returns where they stopped.
    fn sweep(
        &mut self,
        mut i: isize,
        mut j: isize,
        left: impl Fn(&Self, isize) -> bool,
        right: impl Fn(&Self, isize) -> bool,
    ) -> (isize, isize) {
        loop {
            while i <= j && left(self, i) {
                i += 1;
            }
            while i <= j && right(self, j) {
                j -= 1;
            }
            if i > j {
                return (i, j);
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }

    fn partial_insertion_sort(&mut self, a: isize, b: isize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: isize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            if b - i >= 2 {
                let mut j = i + 1;
                while j < b {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j += 1;
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: isize, b: isize) {
        let length = b - a;
        if length >= 8 {
            let mut random = XorShift(length as u64);
            let modulus = 1u64 << bit_len(length as usize);
            let mut idx = a + (length / 4) * 2 - 1;
            while idx <= a + (length / 4) * 2 + 1 {
                let mut other = (random.next() & (modulus - 1)) as isize;
                if other >= length {
                    other -= length;
                }
                self.swap(idx, a + other);
                idx += 1;
            }
        }
    }

    fn choose_pivot(&mut self, a: isize, b: isize) -> (isize, Hint) {
        const SHORTEST_NINTHER: isize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let l = b - a;
        let mut swaps = 0;
        let mut i = a + l / 4;
        let mut j = a + l / 4 * 2;
        let mut k = a + l / 4 * 3;
        if l >= 8 {
            if l >= SHORTEST_NINTHER {
                i = self.median_adjacent(i, &mut swaps);
                j = self.median_adjacent(j, &mut swaps);
                k = self.median_adjacent(k, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        match swaps {
            0 => (j, Hint::Increasing),
            MAX_SWAPS => (j, Hint::Decreasing),
            _ => (j, Hint::Unknown),
        }
    }

    fn order2(&self, a: isize, b: isize, swaps: &mut usize) -> (isize, isize) {
        if self.less(b, a) {
            *swaps += 1;
            return (b, a);
        }
        (a, b)
    }

    fn median(&self, a: isize, b: isize, c: isize, swaps: &mut usize) -> isize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, _) = self.order2(b, c, swaps);
        let (_, b) = self.order2(a, b, swaps);
        b
    }

    fn median_adjacent(&self, a: isize, swaps: &mut usize) -> isize {
        self.median(a - 1, a, a + 1, swaps)
    }

    fn reverse_range(&mut self, a: isize, b: isize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed sequence of pseudo-random numbers (no clock, no dependency).
    fn numbers(seed: u64, n: usize, modulo: u64) -> Vec<u64> {
        let mut state = XorShift(seed | 1);
        (0..n).map(|_| state.next() % modulo).collect()
    }

    #[test]
    fn sorts_every_shape_of_input() {
        for n in [0, 1, 2, 7, 12, 13, 49, 50, 51, 200, 1000] {
            for (seed, modulo) in [(1, 3), (2, 1000), (3, u64::MAX)] {
                let mut shapes = vec![numbers(seed, n, modulo)];
                let mut sorted = numbers(seed, n, modulo);
                sorted.sort_unstable();
                shapes.push(sorted.clone());
                shapes.push(sorted.iter().rev().copied().collect());
                for mut shape in shapes {
                    sort(&mut shape, |a, b| a < b);
                    assert_eq!(shape, sorted, "n {n}, seed {seed}, modulo {modulo}");
                }
            }
        }
    }

    /// Equal elements in Go's order: stable up to 12 elements (insertion sort), and otherwise
    /// where pdqsort leaves them. The 18-element case is the order Helm 3.17 and 4.3 were seen
    /// to give 18 tags (tests/embed/addons.rs pulls it with both).
    #[test]
    fn equal_elements_land_where_go_puts_them() {
        let mut few = vec![(0, 'a'), (2, 'b'), (2, 'a'), (1, 'a'), (2, 'c')];
        sort(&mut few, |x, y| x.0 > y.0);
        assert_eq!(few, [(2, 'b'), (2, 'a'), (2, 'c'), (1, 'a'), (0, 'a')]);

        // Tags in byte order: 0.1.0, 0.10.0 ... 0.14.0, 0.2.0 ... 0.9.0, 2.0.0, 2.0.0_a,
        // 2.0.0_b, 2.0.0_c; sorted by precedence, highest first.
        let mut many: Vec<(u64, &str)> = [1, 10, 11, 12, 13, 14, 2, 3, 4, 5, 6, 7, 8, 9]
            .into_iter()
            .map(|minor| (minor, ""))
            .chain([(100, ""), (100, "a"), (100, "b"), (100, "c")])
            .collect();
        sort(&mut many, |x, y| x.0 > y.0);
        assert_eq!(many.first(), Some(&(100, "c")), "{many:?}");
    }
}
