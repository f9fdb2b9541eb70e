//! Walks down a graph of versions or commits (child to parents), without recursion: a hostile
//! history may be as deep as it likes. The one parents-first walk, and what a node reaches.

use std::collections::HashSet;
use std::hash::Hash;

/// A walk that visits each node after its parents ([`parents_first`]).
pub(crate) trait ParentsFirst {
    type Node;
    type Error;

    /// A node met going down: `None` passes over it (done before, known, outside the walk, or
    /// met again while its own parents are walked, which is a cycle for the walker to judge);
    /// else its parents, walked in the order given before the node is left.
    fn enter(&mut self, node: &Self::Node) -> Result<Option<Vec<Self::Node>>, Self::Error>;

    /// A node whose parents were all walked (or passed over).
    fn leave(&mut self, node: Self::Node) -> Result<(), Self::Error>;
}

/// A step of the walk: only nodes on the stack, so a long chain holds only its IDs.
enum Step<N> {
    Enter(N),
    Leave(N),
}

/// Walks down from each tip in turn, leaving every node after its parents; the first error
/// stops the walk.
pub(crate) fn parents_first<W: ParentsFirst>(
    tips: impl IntoIterator<Item = W::Node>,
    walker: &mut W,
) -> Result<(), W::Error> {
    for tip in tips {
        let mut stack = vec![Step::Enter(tip)];
        while let Some(step) = stack.pop() {
            let node = match step {
                Step::Leave(node) => {
                    walker.leave(node)?;
                    continue;
                }
                Step::Enter(node) => node,
            };
            let Some(parents) = walker.enter(&node)? else {
                continue;
            };
            stack.push(Step::Leave(node));
            // Popped in the order given.
            stack.extend(parents.into_iter().rev().map(Step::Enter));
        }
    }
    Ok(())
}

/// Every node `starts` reach through `parents`, the starts included, each visited once.
pub(crate) fn reachable<N, P>(starts: Vec<N>, mut parents: impl FnMut(&N) -> P) -> HashSet<N>
where
    N: Clone + Eq + Hash,
    P: IntoIterator<Item = N>,
{
    let mut seen = HashSet::new();
    walk_down(starts, &mut seen, &mut parents, |_| false);
    seen
}

/// Whether `target` is among `starts` or what they reach through `parents`; the walk stops
/// once it is found.
pub(crate) fn reaches<N, P>(starts: Vec<N>, target: &N, mut parents: impl FnMut(&N) -> P) -> bool
where
    N: Clone + Eq + Hash,
    P: IntoIterator<Item = N>,
{
    walk_down(starts, &mut HashSet::new(), &mut parents, |n| n == target)
}

/// Visits what `starts` reach into `seen` until `found` holds for a node: whether it did.
fn walk_down<N, P>(
    mut stack: Vec<N>,
    seen: &mut HashSet<N>,
    parents: &mut impl FnMut(&N) -> P,
    found: impl Fn(&N) -> bool,
) -> bool
where
    N: Clone + Eq + Hash,
    P: IntoIterator<Item = N>,
{
    while let Some(n) = stack.pop() {
        if found(&n) {
            return true;
        }
        if seen.insert(n.clone()) {
            stack.extend(parents(&n));
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Leaves nodes into `order`, reporting a node met while under way.
    struct Order<'a> {
        parents: &'a HashMap<u32, Vec<u32>>,
        done: HashSet<u32>,
        under_way: HashSet<u32>,
        order: Vec<u32>,
    }

    impl ParentsFirst for Order<'_> {
        type Node = u32;
        type Error = u32;
        fn enter(&mut self, n: &u32) -> Result<Option<Vec<u32>>, u32> {
            if self.done.contains(n) {
                return Ok(None);
            }
            if !self.under_way.insert(*n) {
                return Err(*n);
            }
            Ok(Some(self.parents.get(n).cloned().unwrap_or_default()))
        }
        fn leave(&mut self, n: u32) -> Result<(), u32> {
            self.done.insert(n);
            self.order.push(n);
            Ok(())
        }
    }

    fn walk(edges: &[(u32, &[u32])], tips: &[u32]) -> Result<Vec<u32>, u32> {
        let parents: HashMap<u32, Vec<u32>> = edges.iter().map(|(n, p)| (*n, p.to_vec())).collect();
        let mut w = Order {
            parents: &parents,
            done: HashSet::new(),
            under_way: HashSet::new(),
            order: Vec::new(),
        };
        parents_first(tips.iter().copied(), &mut w)?;
        Ok(w.order)
    }

    #[test]
    fn parents_come_first_in_the_order_given_and_each_once() {
        let order = walk(&[(4, &[2, 3]), (3, &[1]), (2, &[1])], &[4, 3]).unwrap();
        assert_eq!(order, [1, 2, 3, 4]);
    }

    #[test]
    fn a_cycle_is_met_while_under_way_and_a_deep_chain_needs_no_recursion() {
        assert_eq!(walk(&[(1, &[2]), (2, &[3]), (3, &[1])], &[1]), Err(1));
        let chain: Vec<(u32, Vec<u32>)> = (1..200_000).map(|n| (n, vec![n - 1])).collect();
        let edges: Vec<(u32, &[u32])> = chain.iter().map(|(n, p)| (*n, &p[..])).collect();
        assert_eq!(walk(&edges, &[199_999]).unwrap().len(), 200_000);
    }

    #[test]
    fn reachable_and_reaches() {
        let parents = |n: &u32| if *n > 0 { vec![n - 1, n / 2] } else { vec![] };
        assert_eq!(reachable(vec![6], parents).len(), 7);
        assert!(reaches(vec![6], &0, parents));
        assert!(!reaches(vec![3], &4, parents));
    }
}
