package dev.varve.snapshot;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;
import java.util.function.LongToIntFunction;

/**
 * What recovery from the latest checkpoint mark reads back of a log where a snapshot's latest entry in each slot wins
 * — the join log (a slot per level: {@link JoinLog#read} keeps the latest position of each) and the move log (one
 * slot: the latest copy) — found by one scan of the log when it is compacted ({@link PrefixCompaction#compactLatest}).
 *
 * <p>Recovery reads the entries before the mark (a prefix, {@link MaplogFile#prefix}) and uses only those of the
 * snapshots still live, the latest of each slot. So before the mark, an entry of a kept snapshot is needed only while
 * no later entry of that snapshot in its slot is also before the mark, and those of the others (dropped, the drop
 * durable) not at all; after the mark everything is needed (recovery from the next mark reads it). A prefix
 * compaction can let go of what lies before the oldest needed entry only: a snapshot kept for good whose entries are
 * old (raised, or copied by lazy ranking, long ago) would keep every later entry of every other snapshot. Such a
 * snapshot's needed entries can be written again at the log's end ({@link #worthRefreshing}): once a mark counts the
 * copies, they are its latest and the old ones are no longer needed.
 */
final class LatestEntries {
    /**
     * How a log is read back: {@code beforeMark} tells, from an entry's first field, whether recovery from the latest
     * mark reads it (true for a prefix of the log); {@code slot}, from its third, which of a snapshot's entries
     * supersede each other (those of one slot: the later wins).
     */
    record Shape(LongPredicate beforeMark, LongToIntFunction slot) {
    }

    /** A kept snapshot's needed entries before the mark, one per slot: their positions and third fields. */
    static final class Held {
        final long id;
        private int[] slots = new int[4];
        private long[] positions = new long[4];
        private long[] values = new long[4];
        private int n;
        /** The position of the oldest of them. */
        private long start = Long.MAX_VALUE;
        /** Whether the snapshot has entries after the mark too: those win over anything written now, so it is not refreshed. */
        private boolean after;

        private Held(long id) {
            this.id = id;
        }

        private void put(int slot, long position, long value) {
            int i = 0;
            while (i < n && slots[i] != slot) i++;
            if (i == n) {
                if (n == slots.length) {
                    slots = Arrays.copyOf(slots, 2 * n);
                    positions = Arrays.copyOf(positions, 2 * n);
                    values = Arrays.copyOf(values, 2 * n);
                }
                slots[n++] = slot;
            }
            positions[i] = position;
            values[i] = value;
        }

        /** The entries held, one per slot. */
        int entries() {
            return n;
        }

        /** The third field of entry {@code i}: what recovery reads for its slot. */
        long value(int i) {
            return values[i];
        }
    }

    /** Entries read at a time (128 KiB). */
    private static final int CHUNK = 4096;
    /** Position of the first entry recovery from the latest mark does not read; the log's count when it reads all. */
    final long boundary;
    /** The kept snapshots with needed entries before the mark, oldest first by {@link Held#start}. */
    private final List<Held> held;

    private LatestEntries(long boundary, List<Held> held) {
        this.boundary = boundary;
        this.held = held;
    }

    /** Reads {@code file} whole, noting the needed entries of the snapshots {@code keeps} accepts. */
    static LatestEntries scan(MaplogFile file, Shape shape, LongPredicate keeps) {
        long[] a = new long[CHUNK];
        long[] b = new long[CHUNK];
        long[] c = new long[CHUNK];
        long end = file.count();
        long boundary = -1;
        Map<Long, Held> byId = new HashMap<>();
        for (long at = file.first(); at < end; at += CHUNK) {
            int k = (int) Math.min(CHUNK, end - at);
            file.read(at, k, a, b, c);
            for (int i = 0; i < k; i++) {
                if (boundary < 0 && !shape.beforeMark().test(a[i])) boundary = at + i; // from here on recovery reads nothing
                if (!keeps.test(b[i])) continue;
                Held h = byId.computeIfAbsent(b[i], Held::new);
                if (boundary >= 0) h.after = true;
                else h.put(shape.slot().applyAsInt(c[i]), at + i, c[i]);
            }
        }
        List<Held> held = new ArrayList<>();
        for (Held h : byId.values()) {
            if (h.n == 0) continue; // only entries after the mark, which stay anyway
            for (int i = 0; i < h.n; i++) h.start = Math.min(h.start, h.positions[i]);
            held.add(h);
        }
        held.sort(Comparator.comparingLong(h -> h.start));
        return new LatestEntries(boundary < 0 ? end : boundary, held);
    }

    /** Position of the first entry still needed: nothing before it is read again. */
    long cut() {
        return held.isEmpty() ? boundary : held.get(0).start;
    }

    /**
     * The oldest kept snapshots whose needed entries are worth writing again at the log's end (which holds {@code end}
     * entries), so that a compaction after the next mark lets go of everything before the next needed entry: the run
     * of them, oldest first, where that gain most exceeds twice the entries written, and only when it lets at least
     * half of what the compaction keeps now go. A log whose needed entries lie close together (every snapshot in it
     * live) gains nothing and gets none; one where a snapshot kept for good holds a long span of dropped snapshots'
     * entries gets that snapshot's few. What then stays before the mark is at most twice the needed entries, so the
     * log follows the live snapshots, not the span since the oldest. None for a snapshot with entries after the mark:
     * they are newer than what a copy would say.
     */
    List<Held> worthRefreshing(long end) {
        long cut = cut();
        long best = 0;
        long bestGain = 0;
        int bestCount = 0;
        long written = 0;
        for (int k = 1; k <= held.size(); k++) {
            Held h = held.get(k - 1);
            if (h.after) break; // it stays where it is, and so does everything after it
            written += h.n;
            long gain = (k < held.size() ? held.get(k).start : boundary) - cut;
            if (gain - 2 * written > best) {
                best = gain - 2 * written;
                bestGain = gain;
                bestCount = k;
            }
        }
        if (bestCount == 0 || 2 * bestGain < end - cut) return List.of();
        return held.subList(0, bestCount);
    }
}
