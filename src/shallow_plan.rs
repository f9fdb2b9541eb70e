//! Where a shallow history ends (`--depth`, `--deepen`, `--shallow-since`,
//! `--shallow-exclude`, `--unshallow`), worked out on a graph of versions as Git's
//! `upload-pack` works it out on commits (`shallow.c`: `get_shallow_commits` and
//! `get_shallow_commits_by_rev_list`), so that a shallow clone of a lake holds what Git gives
//! from a bare repository of the same commits. Pure: no store, no repository.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use crate::graph::{parents_first, ParentsFirst};

/// How far down a fetch goes, as Git asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Limit<N> {
    /// No limit asked, in a shallow repository: what the wants reach down to the commits it
    /// holds, its shallow commits left as they are.
    Plain,
    /// `--depth N`: N generations from the wanted commits, those included.
    Depth(u32),
    /// `--deepen N`: N generations more below the repository's shallow commits.
    Deepen(u32),
    /// `--unshallow`: everything, and no commit stays shallow.
    Everything,
    /// `--shallow-since`, `--shallow-exclude`: what `git rev-list <wants> --max-age=<since>
    /// --not <excluded>` selects.
    Selected {
        since: Option<i64>,
        excluded: Vec<N>,
    },
}

/// The graph the plan walks: each node's parents and committer time, where known.
pub(crate) trait Graph<N> {
    /// `None` when the node's parents are not known (the plan then asks for it).
    fn parents(&self, node: &N) -> Option<&[N]>;
    /// Seconds since the epoch; asked only for `--shallow-since`.
    fn time(&self, node: &N) -> Option<i64>;
    /// Whether the repository holds the node's commit; asked only for [`Limit::Plain`].
    fn present(&self, node: &N) -> bool;
}

/// What a fetch leaves in the repository.
#[derive(Debug, Default)]
pub(crate) struct Plan<N> {
    /// Every node the repository is to hold after the fetch, parents first: what the wants
    /// (and the parents of each commit no longer shallow) reach, down to the new boundary.
    pub holds: Vec<N>,
    /// The repository's new shallow nodes: the old ones still shallow and the new boundary.
    pub shallow: HashSet<N>,
}

/// Why no plan can be made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PlanError<N> {
    /// The walk met a node whose parents (or time) are not known.
    Unknown(N),
    /// `--shallow-since` and `--shallow-exclude` left nothing (Git's own words then:
    /// "no commits selected for shallow requests").
    NothingSelected,
}

/// The plan for a fetch of `wants` into a repository whose shallow nodes are `old`.
pub(crate) fn plan<N: Clone + Eq + Hash>(
    graph: &dyn Graph<N>,
    wants: &[N],
    old: &HashSet<N>,
    limit: &Limit<N>,
) -> Result<Plan<N>, PlanError<N>> {
    let (boundary, not_shallow): (HashSet<N>, HashSet<N>) = match limit {
        Limit::Depth(depth) => by_depth(graph, wants, *depth)?,
        Limit::Deepen(more) => {
            let heads: Vec<N> = old
                .iter()
                .filter(|n| graph.parents(n).is_some())
                .cloned()
                .collect();
            by_depth(graph, &heads, more.saturating_add(1))?
        }
        Limit::Plain => (HashSet::new(), HashSet::new()),
        Limit::Everything => (HashSet::new(), old.clone()),
        Limit::Selected { since, excluded } => selected(graph, wants, *since, excluded)?,
    };
    let unshallowed: Vec<N> = old
        .iter()
        .filter(|n| not_shallow.contains(*n))
        .cloned()
        .collect();
    let mut shallow: HashSet<N> = old
        .iter()
        .filter(|n| !not_shallow.contains(*n))
        .cloned()
        .collect();
    shallow.extend(boundary);
    // Git wants the parents of each commit it unshallows, whatever the wants reach.
    let mut starts: Vec<N> = wants.to_vec();
    starts.extend(unshallowed);
    let stop_at_present = matches!(limit, Limit::Plain);
    let holds = holds(graph, starts, &shallow, stop_at_present)?;
    Ok(Plan { holds, shallow })
}

/// Each node's smallest distance from `heads`, down to `depth` generations: the last
/// generation is the boundary, the ones above it are not shallow.
fn by_depth<N: Clone + Eq + Hash>(
    graph: &dyn Graph<N>,
    heads: &[N],
    depth: u32,
) -> Result<(HashSet<N>, HashSet<N>), PlanError<N>> {
    let mut boundary = HashSet::new();
    let mut not_shallow = HashSet::new();
    if depth == 0 {
        return Ok((boundary, not_shallow));
    }
    let mut seen: HashMap<N, u32> = HashMap::new();
    let mut queue: VecDeque<(N, u32)> = VecDeque::new();
    for h in heads {
        if seen.insert(h.clone(), 0).is_none() {
            queue.push_back((h.clone(), 0));
        }
    }
    // Breadth first: each node is met first at its smallest depth.
    while let Some((node, d)) = queue.pop_front() {
        if d + 1 >= depth {
            boundary.insert(node);
            continue;
        }
        let parents = graph
            .parents(&node)
            .ok_or_else(|| PlanError::Unknown(node.clone()))?;
        for p in parents {
            if !seen.contains_key(p) {
                seen.insert(p.clone(), d + 1);
                queue.push_back((p.clone(), d + 1));
            }
        }
        not_shallow.insert(node);
    }
    Ok((boundary, not_shallow))
}

/// What `rev-list <wants> --max-age=<since> --not <excluded>` selects (a commit older than
/// `since` is passed over with what only it leads to), and its border: each selected node
/// with a parent not selected.
fn selected<N: Clone + Eq + Hash>(
    graph: &dyn Graph<N>,
    wants: &[N],
    since: Option<i64>,
    excluded: &[N],
) -> Result<(HashSet<N>, HashSet<N>), PlanError<N>> {
    let mut out: HashSet<N> = HashSet::new();
    let mut stack: Vec<N> = excluded.to_vec();
    while let Some(n) = stack.pop() {
        if out.insert(n.clone()) {
            let parents = graph
                .parents(&n)
                .ok_or_else(|| PlanError::Unknown(n.clone()))?;
            stack.extend(parents.iter().cloned());
        }
    }
    let mut chosen: HashSet<N> = HashSet::new();
    let mut stack: Vec<N> = wants.to_vec();
    while let Some(n) = stack.pop() {
        if out.contains(&n) || chosen.contains(&n) {
            continue;
        }
        if let Some(since) = since {
            let time = graph
                .time(&n)
                .ok_or_else(|| PlanError::Unknown(n.clone()))?;
            if time < since {
                continue;
            }
        }
        let parents = graph
            .parents(&n)
            .ok_or_else(|| PlanError::Unknown(n.clone()))?;
        stack.extend(parents.iter().cloned());
        chosen.insert(n);
    }
    if chosen.is_empty() {
        return Err(PlanError::NothingSelected);
    }
    let border: HashSet<N> = chosen
        .iter()
        .filter(|n| {
            let parents = graph.parents(n).unwrap_or(&[]);
            parents.iter().any(|p| !chosen.contains(p))
        })
        .cloned()
        .collect();
    let inside = chosen.difference(&border).cloned().collect();
    Ok((border, inside))
}

/// What `starts` reach, parents first, not below a shallow node (nor, with `stop_at_present`,
/// from a node the repository holds).
fn holds<N: Clone + Eq + Hash>(
    graph: &dyn Graph<N>,
    starts: Vec<N>,
    shallow: &HashSet<N>,
    stop_at_present: bool,
) -> Result<Vec<N>, PlanError<N>> {
    let mut walk = Holds {
        graph,
        shallow,
        stop_at_present,
        done: HashSet::new(),
        order: Vec::new(),
    };
    parents_first(starts, &mut walk)?;
    Ok(walk.order)
}

/// The walk of [`holds`].
struct Holds<'g, N> {
    graph: &'g dyn Graph<N>,
    shallow: &'g HashSet<N>,
    stop_at_present: bool,
    done: HashSet<N>,
    order: Vec<N>,
}

impl<N: Clone + Eq + Hash> ParentsFirst for Holds<'_, N> {
    type Node = N;
    type Error = PlanError<N>;

    fn enter(&mut self, node: &N) -> Result<Option<Vec<N>>, PlanError<N>> {
        if self.done.contains(node) || (self.stop_at_present && self.graph.present(node)) {
            return Ok(None);
        }
        if self.shallow.contains(node) {
            return Ok(Some(Vec::new()));
        }
        let parents = self
            .graph
            .parents(node)
            .ok_or_else(|| PlanError::Unknown(node.clone()))?;
        Ok(Some(
            parents
                .iter()
                .filter(|p| !self.done.contains(*p))
                .cloned()
                .collect(),
        ))
    }

    fn leave(&mut self, node: N) -> Result<(), PlanError<N>> {
        if self.done.insert(node.clone()) {
            self.order.push(node);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes are numbers; each maps to its parents and its time.
    struct G(HashMap<u32, (Vec<u32>, i64)>);

    impl Graph<u32> for G {
        fn parents(&self, n: &u32) -> Option<&[u32]> {
            self.0.get(n).map(|(p, _)| &p[..])
        }
        fn time(&self, n: &u32) -> Option<i64> {
            self.0.get(n).map(|(_, t)| *t)
        }
        fn present(&self, n: &u32) -> bool {
            *n <= 3
        }
    }

    /// 1 <- 2 <- 3 <- 4 <- 5, and a side branch 2 <- 6 merged by 5 (5's parents: 4, 6).
    fn graph() -> G {
        G(HashMap::from([
            (1, (vec![], 100)),
            (2, (vec![1], 200)),
            (3, (vec![2], 300)),
            (4, (vec![3], 400)),
            (6, (vec![2], 350)),
            (5, (vec![4, 6], 500)),
        ]))
    }

    fn set(v: &[u32]) -> HashSet<u32> {
        v.iter().copied().collect()
    }

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort();
        v
    }

    #[test]
    fn depth_one_holds_the_wants_alone_and_marks_them_shallow() {
        let p = plan(&graph(), &[5], &set(&[]), &Limit::Depth(1)).unwrap();
        assert_eq!(p.holds, vec![5]);
        assert_eq!(p.shallow, set(&[5]));
    }

    #[test]
    fn depth_counts_the_shortest_way_down() {
        // 2 is at depth 2 through 6 and at depth 3 through 4: depth 3 ends at 2.
        let p = plan(&graph(), &[5], &set(&[]), &Limit::Depth(3)).unwrap();
        assert_eq!(sorted(p.holds), vec![2, 3, 4, 5, 6]);
        assert_eq!(p.shallow, set(&[3, 2]));
    }

    #[test]
    fn a_root_at_the_boundary_is_shallow_as_git_marks_it() {
        let p = plan(&graph(), &[2], &set(&[]), &Limit::Depth(2)).unwrap();
        assert_eq!(p.shallow, set(&[1]));
        let p = plan(&graph(), &[2], &set(&[]), &Limit::Depth(3)).unwrap();
        assert_eq!(p.shallow, set(&[]));
    }

    #[test]
    fn deepen_goes_below_the_old_boundary_and_unshallows_it() {
        let p = plan(&graph(), &[5], &set(&[5]), &Limit::Deepen(1)).unwrap();
        assert_eq!(sorted(p.holds), vec![4, 5, 6]);
        assert_eq!(p.shallow, set(&[4, 6]));
    }

    #[test]
    fn unshallow_holds_everything_and_leaves_nothing_shallow() {
        let p = plan(&graph(), &[5], &set(&[4, 6]), &Limit::Everything).unwrap();
        assert_eq!(sorted(p.holds), vec![1, 2, 3, 4, 5, 6]);
        assert!(p.shallow.is_empty());
    }

    #[test]
    fn since_stops_at_older_commits_and_marks_the_border() {
        let limit = Limit::Selected {
            since: Some(300),
            excluded: vec![],
        };
        let p = plan(&graph(), &[5], &set(&[]), &limit).unwrap();
        assert_eq!(sorted(p.holds), vec![3, 4, 5, 6]);
        assert_eq!(p.shallow, set(&[3, 6]));
    }

    #[test]
    fn exclude_leaves_out_what_the_excluded_ref_reaches() {
        let limit = Limit::Selected {
            since: None,
            excluded: vec![3],
        };
        let p = plan(&graph(), &[5], &set(&[]), &limit).unwrap();
        assert_eq!(sorted(p.holds), vec![4, 5, 6]);
        assert_eq!(p.shallow, set(&[4, 6]));
        let everything = Limit::Selected {
            since: None,
            excluded: vec![5],
        };
        let none = plan(&graph(), &[5], &set(&[]), &everything);
        assert!(matches!(none, Err(PlanError::NothingSelected)));
    }

    #[test]
    fn a_plain_fetch_stops_at_what_the_repository_holds() {
        let p = plan(&graph(), &[5], &set(&[3]), &Limit::Plain).unwrap();
        assert_eq!(sorted(p.holds), vec![4, 5, 6]);
        assert_eq!(p.shallow, set(&[3]));
    }

    #[test]
    fn an_unknown_parent_is_named() {
        let g = G(HashMap::from([(2, (vec![1], 0))]));
        assert!(matches!(
            plan(&g, &[2], &set(&[]), &Limit::Depth(5)),
            Err(PlanError::Unknown(1))
        ));
    }

    #[test]
    fn old_shallow_commits_outside_the_lake_stay() {
        let p = plan(&graph(), &[5], &set(&[99]), &Limit::Depth(1)).unwrap();
        assert_eq!(p.shallow, set(&[5, 99]));
    }
}
