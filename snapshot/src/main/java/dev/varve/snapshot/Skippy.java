package dev.varve.snapshot;

import dev.varve.core.util.LongLongMap;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.FileIOFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Maplog with Skippy levels above it. Level 0 is the Maplog itself (page id, snapshot, Pagelog address, in
 * snapshot order: I7). Each level is cut into nodes of {@code nodeEntries} mappings; when a node fills, its
 * first-encountered mappings (the first per page id) are promoted to the next level, and an uplink records where
 * they start and end there. Building SPT(v) scans from Start(v) to the end of its node, then climbs the uplink of the
 * next node: a level-(i+1) entry stands for a whole run of level-i mappings with repeats of hot pages dropped.
 *
 * <p>Entering a level only where a lower node's promoted mappings start keeps "first encountered" exact: a node's
 * promotion drops only mappings already seen earlier in that same node. Upper levels and uplinks are derived, so
 * {@link #repair} redoes whatever promotions a crash left incomplete. Every level is kept in parts; the parts no
 * snapshot's scan can reach any more are reclaimed whole ({@link #reclaimBefore}).
 *
 * <p>One writer (the archiver); scans may run concurrently and see a prefix.
 */
final class Skippy implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Skippy.class);
    private final int height;
    private final int nodeEntries;
    private final MaplogFile[] levels;
    private final MaplogFile[] uplinks;
    /** Per level, the mappings of its current (unfilled) node: page ids, snapshots, addresses. */
    private final long[][] nodePages;
    private final long[][] nodeSnapshots;
    private final long[][] nodeAddresses;
    /** Per level below the top, the page ids seen by the promotion under way ({@link #seenIn}). */
    private final LongLongMap[] seen;
    /** Snapshot of the last Maplog mapping (I7). */
    private long lastSnapshot;

    Skippy(FileIOFactory io, Path dir, int height, int nodeEntries, long partEntries) {
        this(io, dir, height, nodeEntries, partEntries, MaplogFile.Missing.CREATE, new AtomicLong());
    }

    /**
     * Opens the levels in {@code dir}, reading only; {@link #truncate} repairs them after a crash. {@code storeId}: the
     * store's durable id (0 until a marker holds it), see {@link MaplogFile}.
     */
    Skippy(FileIOFactory io, Path dir, int height, int nodeEntries, long partEntries, MaplogFile.Missing missing, AtomicLong storeId) {
        this.height = height;
        this.nodeEntries = nodeEntries;
        levels = new MaplogFile[height + 1];
        uplinks = new MaplogFile[height];
        seen = new LongLongMap[height];
        nodePages = new long[height + 1][nodeEntries];
        nodeSnapshots = new long[height + 1][nodeEntries];
        nodeAddresses = new long[height + 1][nodeEntries];
        try {
            for (int i = 0; i <= height; i++) {
                levels[i] = new MaplogFile(io, dir.resolve("maplog-L" + i + ".log"), MaplogDescriptor.Kind.MAPPINGS, i, nodeEntries, partEntries, missing, storeId);
                if (i < height) uplinks[i] = new MaplogFile(io, dir.resolve("skippy-uplinks-L" + i + ".log"), MaplogDescriptor.Kind.UPLINKS, i, nodeEntries, partEntries,
                        missing, storeId);
            }
            loadNodes();
        } catch (RuntimeException e) {
            Closing.closeAll(e, Arrays.asList(levels));
            Closing.closeAll(e, Arrays.asList(uplinks));
            throw e;
        }
    }

    /**
     * Recovery, before any cut: throws a {@link dev.varve.core.io.CorruptionException} naming the file unless the
     * Maplog holds its first {@code mappings} and every uplink and upper level what stood for them at the checkpoint
     * mark — promotions are made with the append that fills a node, and all of them were durable by the mark.
     */
    void checkDurable(long mappings) {
        long durable = mappings;
        long[] end = new long[1];
        for (int i = 0; i <= height; i++) {
            levels[i].checkDurable(durable);
            if (i == height) break;
            long links = durable < 0 ? -1 : durable / nodeEntries;
            uplinks[i].checkDurable(links);
            if (links <= 0 || links - 1 < uplinks[i].first()) {
                durable = links == 0 ? 0 : -1; // none, or not known: reclaimed
            } else {
                uplinks[i].read(links - 1, 1, null, end, null);
                durable = end[0];
            }
        }
    }

    /** The Maplog (level 0). */
    MaplogFile maplog() {
        return levels[0];
    }

    int height() {
        return height;
    }

    /** Mappings in the Maplog. */
    long size() {
        return levels[0].count();
    }

    /**
     * Makes the upper levels agree with the Maplog after a crash (or a cut): first every uplink past its level's
     * complete nodes, and every upper-level mapping past the last uplink, is dropped; then, from the top level down,
     * the complete nodes without an uplink are promoted again — top-down, so that a node filled by these promotions
     * finds every level above it consistent. Then the current node of every level is reloaded.
     */
    private void repair() {
        long[] end = new long[1];
        for (int i = 0; i < height; i++) {
            long links = Math.min(uplinks[i].count(), levels[i].count() / nodeEntries);
            long keep = 0;
            for (; links > uplinks[i].first(); links--) { // an uplink past the level above's end goes too: redone below
                uplinks[i].read(links - 1, 1, null, end, null);
                keep = end[0];
                if (keep <= levels[i + 1].count()) break;
                keep = 0;
            }
            uplinks[i].truncate(links);
            levels[i + 1].truncate(keep);
        }
        for (int i = height - 1; i >= 0; i--) {
            for (int j = i + 1; j <= height; j++) loadCurrentNode(j);
            long complete = levels[i].count() / nodeEntries;
            if (uplinks[i].count() < complete)
                LOG.warn("Skippy level {} lacks the promotions of nodes [{}, {}) after a crash; redoing them", i, uplinks[i].count(), complete);
            for (long node = uplinks[i].count(); node < complete; node++) {
                levels[i].read(node * nodeEntries, nodeEntries, nodePages[i], nodeSnapshots[i], nodeAddresses[i]);
                promote(i, nodeEntries);
            }
        }
        loadNodes();
    }

    /** Loads every level's current node and the snapshot of the last mapping. */
    private void loadNodes() {
        for (int i = 0; i <= height; i++) loadCurrentNode(i);
        lastSnapshot = snapshotBefore(levels[0].count());
    }

    /** The snapshot of the last mapping before position {@code end}, 0 when the Maplog holds none there (or reclaimed it). */
    long snapshotBefore(long end) {
        if (end <= levels[0].first()) return 0;
        long[] last = new long[1];
        levels[0].read(end - 1, 1, null, last, null);
        return last[0];
    }

    /** Loads the mappings of a level's current (unfilled) node into its node arrays. */
    private void loadCurrentNode(int level) {
        int partial = (int) (levels[level].count() % nodeEntries);
        levels[level].read(levels[level].count() - partial, partial, nodePages[level], nodeSnapshots[level], nodeAddresses[level]);
    }

    /**
     * Reclaims every part of every level that no scan from Maplog position {@code bound} on can reach: Maplog nodes
     * before the one holding {@code bound}, the uplinks of those nodes (but the last, which {@link #repair} reads),
     * and the upper-level mappings that stand for them.
     */
    void reclaimBefore(long bound) {
        long b = bound / nodeEntries * nodeEntries;
        long[] start = new long[1];
        for (int i = 0; i <= height; i++) {
            levels[i].reclaimBefore(b);
            if (i == height) break;
            long node = b / nodeEntries;
            uplinks[i].reclaimBefore(Math.max(0, Math.min(node, uplinks[i].count()) - 1));
            long links = uplinks[i].count();
            long next = levels[i + 1].first();
            if (node < links && node >= uplinks[i].first()) {
                uplinks[i].read(node, 1, start, null, null); // where that node's promoted mappings start
                next = start[0];
            } else if (node >= links && links > 0) {
                uplinks[i].read(links - 1, 1, null, start, null); // every promoted node lies before: up to the last one's end
                next = start[0];
            }
            b = next / nodeEntries * nodeEntries;
        }
    }

    /**
     * Appends a mapping to the Maplog, promoting filled nodes up the levels. I7: all mappings of pages retained for
     * v precede those for v+1 — a mapping for an older snapshot than the last one is refused, since SPT
     * construction ("first encountered from Start(v)") would silently return a wrong image.
     */
    void append(long pageId, long snapshot, long address) {
        if (snapshot < lastSnapshot)
            throw new IllegalStateException("Maplog order (I7) violated: mapping for snapshot " + snapshot + " after one for " + lastSnapshot);
        appendAt(0, pageId, snapshot, address);
        lastSnapshot = snapshot;
    }

    private void appendAt(int level, long pageId, long snapshot, long address) {
        MaplogFile f = levels[level];
        int slot = (int) (f.count() % nodeEntries);
        f.append(pageId, snapshot, address);
        nodePages[level][slot] = pageId;
        nodeSnapshots[level][slot] = snapshot;
        nodeAddresses[level][slot] = address;
        if (slot == nodeEntries - 1 && level < height) promote(level, nodeEntries);
    }

    /**
     * Promotes the first-encountered mappings of the filled node held in the level's node arrays, which stay as they
     * are meanwhile: the appends write the level above's arrays only.
     */
    private void promote(int level, int n) {
        long start = levels[level + 1].count();
        LongLongMap seen = seenIn(level);
        long[] pages = nodePages[level];
        for (int i = 0; i < n; i++) {
            if (seen.putIfAbsent(pages[i], i)) appendAt(level + 1, pages[i], nodeSnapshots[level][i], nodeAddresses[level][i]);
        }
        uplinks[level].append(start, levels[level + 1].count(), 0);
    }

    /** The empty set of page ids a promotion of {@code level} fills: one per level, made at its first promotion and reused. */
    private LongLongMap seenIn(int level) {
        if (seen[level] == null) seen[level] = new LongLongMap(nodeEntries);
        else seen[level].clear();
        return seen[level];
    }

    /**
     * Feeds every first-encountered mapping of Maplog positions [{@code from}, {@code end}) into {@code spt}: page
     * id → Pagelog address. Safe while the archiver appends: every level is read only as far as the part that
     * stands for [from, end).
     */
    void buildSpt(long from, LongLongMap spt, long end) {
        scan(0, from, end, spt);
    }

    /** Adds the raw Maplog mappings of [from, current end) to {@code spt}; caller excludes the archiver. */
    void catchUp(long from, LongLongMap spt) {
        long end = levels[0].count();
        long[] pages = new long[nodeEntries];
        long[] addrs = new long[nodeEntries];
        for (long p = from; p < end; ) {
            int n = (int) Math.min(nodeEntries, end - p);
            levels[0].read(p, n, pages, null, addrs);
            for (int i = 0; i < n; i++) spt.putIfAbsent(pages[i], addrs[i]);
            p += n;
        }
    }

    private void scan(int level, long from, long end, LongLongMap spt) {
        MaplogFile f = levels[level];
        long promoted = level < height ? Math.min(uplinks[level].count(), end / nodeEntries) : 0;
        long[] pages = new long[nodeEntries];
        long[] addrs = new long[nodeEntries];
        long[] start = new long[1];
        long[] stop = new long[1];
        long p = from;
        while (p < end) {
            long nodeEnd = Math.min((p / nodeEntries + 1) * nodeEntries, end);
            int n = (int) (nodeEnd - p);
            f.read(p, n, pages, null, addrs);
            for (int i = 0; i < n; i++) spt.putIfAbsent(pages[i], addrs[i]);
            p = nodeEnd;
            long next = p / nodeEntries;
            if (p % nodeEntries == 0 && next < promoted) {
                // nodes [next, promoted) stand above as their first-encountered mappings
                uplinks[level].read(next, 1, start, null, null);
                uplinks[level].read(promoted - 1, 1, null, stop, null);
                scan(level + 1, start[0], stop[0], spt);
                p = promoted * nodeEntries;
            }
        }
    }

    /**
     * Recovery: cuts the Maplog to {@code n} mappings and any torn tail, and makes the upper levels agree with it
     * ({@link #repair}).
     */
    void truncate(long n) {
        levels[0].truncate(n);
        repair();
    }

    /**
     * Makes room in every level's buffer for what {@code mappings} appends add: a level above gets as many at most
     * plus one promoted node (a promotion reaching two levels up within them, rare, may still write), an uplink file
     * an entry per promoted node. See {@link MaplogFile#makeRoom}.
     */
    void makeRoom(int mappings) {
        for (int i = 0; i <= height; i++) {
            levels[i].makeRoom(i == 0 ? mappings : mappings + nodeEntries);
            if (i < height) uplinks[i].makeRoom(mappings / nodeEntries + 2);
        }
    }

    /** See {@link MaplogFile#forceWritten}: every level and uplink log, holding none of their monitors. */
    void forceWritten() {
        for (int i = 0; i <= height; i++) {
            levels[i].forceWritten();
            if (i < height) uplinks[i].forceWritten();
        }
    }

    /** fsync of every level and uplink file, Maplog first. */
    void force() {
        for (int i = 0; i <= height; i++) {
            levels[i].force();
            if (i < height) uplinks[i].force();
        }
    }

    /** Mapping bytes on disk, all levels, reclaimed parts not counted. */
    long bytes() {
        long b = 0;
        for (int i = 0; i <= height; i++) b += levels[i].bytes() + (i < height ? uplinks[i].bytes() : 0);
        return b;
    }

    /** Bytes given back by {@link #reclaimBefore} since open, all levels. */
    long reclaimedBytes() {
        long b = 0;
        for (int i = 0; i <= height; i++) b += levels[i].reclaimedBytes() + (i < height ? uplinks[i].reclaimedBytes() : 0);
        return b;
    }

    @Override
    public void close() {
        List<AutoCloseable> files = new ArrayList<>(List.of(levels));
        for (int i = 0; i < height; i++) files.add(uplinks[i]);
        Closeables.closeAll(files.toArray(new AutoCloseable[0]));
    }
}
