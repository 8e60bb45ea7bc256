package dev.varve.engine;

import dev.varve.config.Retention;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the corruption sweep expects a store image to hold: every table's acknowledged contents, every declared
 * snapshot with its rank and its contents as of its declaration, and which snapshots the rank-tree policy still
 * keeps. Liveness mirrors the store's own rule (a snapshot of rank r counts at levels 1..r and lives while one of
 * them keeps it; keepLast(n) keeps the n newest counted there; the policy is enforced at every declaration and rank
 * change), so a snapshot the model calls live must be listed by the store: one that is missing is lost history.
 */
final class SweepModel {
    /** One declared snapshot: its id, current rank, whether the policy still keeps it, and its contents. */
    static final class Snapshot {
        final long id;
        int rank;
        boolean live = true;
        final Map<String, TreeMap<String, byte[]>> contents;

        Snapshot(long id, int rank, Map<String, TreeMap<String, byte[]>> contents) {
            this.id = id;
            this.rank = rank;
            this.contents = contents;
        }
    }

    private final List<Retention> levels;
    private final Map<String, TreeMap<String, byte[]>> tables = new TreeMap<>();
    private final TreeMap<Long, Snapshot> snapshots = new TreeMap<>();
    private long steps;

    SweepModel(List<Retention> levels) {
        this.levels = List.copyOf(levels);
        for (String t : SweepWorkload.TABLES) tables.put(t, new TreeMap<>());
    }

    /** A copy: the model with one more step applied, for a step that was in flight at a kill. */
    SweepModel copy() {
        SweepModel m = new SweepModel(levels);
        tables.forEach((t, kv) -> m.tables.put(t, new TreeMap<>(kv)));
        snapshots.forEach((id, s) -> {
            Snapshot c = new Snapshot(id, s.rank, s.contents);
            c.live = s.live;
            m.snapshots.put(id, c);
        });
        m.steps = steps;
        return m;
    }

    /** Steps applied (acknowledged). */
    long steps() {
        return steps;
    }

    Map<String, TreeMap<String, byte[]>> tables() {
        return tables;
    }

    /** Every snapshot ever declared, live or dropped, by id. */
    TreeMap<Long, Snapshot> snapshots() {
        return snapshots;
    }

    /** The highest snapshot id the application was given, 0 when none. */
    long latestId() {
        return snapshots.isEmpty() ? 0 : snapshots.lastKey();
    }

    /**
     * Records an acknowledged step; {@code snapshotId} is the id the store returned for a declaration (ignored
     * otherwise).
     */
    void apply(SweepWorkload.Step step, long snapshotId) {
        switch (step.kind()) {
            case WRITE -> {
                for (SweepWorkload.Change c : step.changes()) {
                    if (c.value() == null) tables.get(c.table()).remove(c.key());
                    else tables.get(c.table()).put(c.key(), c.value());
                }
            }
            case SNAPSHOT -> {
                if (snapshotId <= latestId()) throw new AssertionError("snapshot id " + snapshotId + " after " + latestId());
                Map<String, TreeMap<String, byte[]>> contents = new TreeMap<>();
                tables.forEach((t, kv) -> contents.put(t, new TreeMap<>(kv)));
                snapshots.put(snapshotId, new Snapshot(snapshotId, step.rank(), contents));
                enforce();
            }
            case RANK -> {
                snapshots.get(step.target()).rank = step.rank();
                enforce();
            }
            case CHECKPOINT -> {
                // changes no contents
            }
            default -> throw new AssertionError(step.kind());
        }
        steps++;
    }

    /**
     * The snapshot to raise one rank: the newest live one below the top level that already left the hybrid page
     * window (so the next checkpoint copies it into a ranked extent) — the newest, so its new level keeps it and the
     * extent lives a while; null when there is none.
     */
    Long rankTarget(int window) {
        List<Snapshot> live = new ArrayList<>();
        for (Snapshot s : snapshots.values()) if (s.live) live.add(s);
        for (int i = live.size() - 1 - window; i >= 0; i--) if (live.get(i).rank < levels.size()) return live.get(i).id;
        return null;
    }

    /** Drops what no level up to its rank keeps: keepLast(n) at level l keeps the n newest live snapshots of rank >= l. */
    private void enforce() {
        List<Snapshot> live = new ArrayList<>();
        for (Snapshot s : snapshots.values()) if (s.live) live.add(s);
        boolean[] kept = new boolean[live.size()];
        for (int level = 1; level <= levels.size(); level++) {
            Retention rule = levels.get(level - 1);
            List<Integer> counted = new ArrayList<>();
            for (int i = 0; i < live.size(); i++) if (Math.min(live.get(i).rank, levels.size()) >= level) counted.add(i);
            for (int j = 0; j < counted.size(); j++) {
                int newer = counted.size() - 1 - j;
                if (rule.kind() == Retention.Kind.ALL || (rule.kind() == Retention.Kind.LAST && newer < rule.count())) {
                    kept[counted.get(j)] = true;
                } else if (rule.kind() == Retention.Kind.FOR) {
                    throw new AssertionError("the sweep's model does not follow time-based retention");
                }
            }
        }
        for (int i = 0; i < live.size(); i++) if (!kept[i]) live.get(i).live = false;
    }
}
