package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.page.Page;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Skip links ({@link PendingCaptures#SKIP}): one page captured thousands of times through the archiver's own path, a
 * few random chunks changed each time, chains up to the default bound of 63 across several segments. Every version
 * reads back exactly, from the open volume and from the files alone, and the chain a read walks from a version at
 * position {@code c} has at most {@code c % SKIP + c / SKIP} links — 14 at 63, where a chain of diffs each against the
 * version before it walks 63 (the test fails so when skip links are not written).
 */
@Timeout(120)
class SkipLinksTest {
    private static final int PAGE = 4096;
    private static final int BOUND = 63;
    private static final int CAPTURES = 3_000;
    private static final long SEGMENT = 256L << 10;
    private static final long PAGE_ID = 7;

    @TempDir
    Path dir;

    private record Version(long address, int chain, byte[] image) {
    }

    @Test
    void everyVersionReadsBackAndNoReadWalksMoreThanTheSkipsAllow() {
        FileIOFactory io = FileIOFactory.standard();
        List<Version> versions = new ArrayList<>();
        try (SnapshotRegistry registry = new SnapshotRegistry(io, dir, RankTreePolicy.levels(Retention.keepAll()), 64);
             ArchiveLevel level = new ArchiveLevel(io, dir, 1, PAGE, 1, 16, SEGMENT, MaplogFile.Missing.CREATE, new AtomicLong())) {
            versions = capture(level, registry);
            assertTrue(level.volume.bytes() > 2 * SEGMENT, "the history spans several segments");
            assertEquals(BOUND, versions.stream().mapToInt(Version::chain).max().orElseThrow(), "chains reach the bound");
            check(level.volume, versions);
        }
        try (Pagelog files = new Pagelog(io, dir.resolve("level-1"), PAGE, SEGMENT)) { // the files alone
            check(files, versions);
        }
    }

    /** Captures the page {@link #CAPTURES} times, each a diff against the one before while its chain is under the bound. */
    private List<Version> capture(ArchiveLevel level, SnapshotRegistry registry) {
        ArchiveLock lock = new ArchiveLock();
        PageSlots slots = new PageSlots(16L * PAGE, PAGE, "captureBufferSize");
        RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), PAGE, -1, () -> 0);
        OpenViews views = new OpenViews(lock, FileIOFactory.standard(), new ArchiveLevel[]{level}, registry, new RankedExtents(), slots);
        PendingCaptures pending = new PendingCaptures(lock, new Archiver(null), new ArchiveLevel[]{level}, slots, views, retention);
        SplittableRandom random = new SplittableRandom(42);
        Page page = new Page(ByteBuffer.allocateDirect(PAGE), 0, PAGE);
        byte[] image = new byte[PAGE];
        random.nextBytes(image);
        page.buffer().put(0, image);
        List<PendingCaptures.Pending> captured = new ArrayList<>();
        List<byte[]> images = new ArrayList<>();
        PendingCaptures.Pending previous = null;
        for (int i = 0; i < CAPTURES; i++) {
            long[] changed = Page.allChanged();
            PendingCaptures.Pending base = previous != null && previous.chain() < BOUND ? previous : null;
            if (previous != null) {
                changed = new long[Page.MASK_LONGS];
                for (int n = 1 + random.nextInt(3); n > 0; n--) {
                    int chunk = random.nextInt(Page.CHUNKS);
                    changed[chunk >>> 6] |= 1L << chunk;
                    int at = chunk * (PAGE / Page.CHUNKS) + random.nextInt(PAGE / Page.CHUNKS);
                    image[at] = (byte) ~image[at];
                }
                page.buffer().put(0, image);
            }
            lock.lock();
            try {
                previous = new PendingCaptures.Pending(i, PAGE_ID, slots.copyOf(page), 1, new long[]{1}, new long[]{i}, 1, i, i + 1, base,
                        base == null ? Page.allChanged() : changed);
                pending.add(previous);
            } finally {
                lock.unlock();
            }
            if (random.nextInt(4) == 0 || slots.used() > 8) while (pending.archiveNext()) { } // sometimes a few in a batch, as the archiver gathers them
            captured.add(previous);
            images.add(image.clone());
        }
        while (pending.archiveNext()) { }
        List<Version> out = new ArrayList<>();
        for (int i = 0; i < captured.size(); i++) out.add(new Version(captured.get(i).address(), captured.get(i).chain(), images.get(i)));
        return out;
    }

    private static void check(Pagelog volume, List<Version> versions) {
        DiffChain links = new DiffChain(PAGE);
        ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
        byte[] read = new byte[PAGE];
        int longestWalk = 0;
        for (Version v : versions) {
            int walked = walk(volume, links, v.address());
            int allowed = v.chain() % PendingCaptures.SKIP + v.chain() / PendingCaptures.SKIP;
            assertTrue(walked <= allowed, "version at chain position " + v.chain() + " walks " + walked + " links, at most " + allowed);
            longestWalk = Math.max(longestWalk, walked);
        }
        assertTrue(longestWalk <= PendingCaptures.SKIP - 1 + BOUND / PendingCaptures.SKIP, "longest walk " + longestWalk);
        for (int i = versions.size() - 1; i >= 0; i--) { // newest first: nothing rebuilt before serves the older ones
            Version v = versions.get(i);
            volume.reader.read(v.address(), PAGE_ID, dst, 0);
            dst.get(0, read);
            assertTrue(Arrays.equals(v.image(), read), "version " + i + " at chain position " + v.chain());
        }
    }

    /**
     * The links from {@code address} back to its chain's whole page, each entry read and checked, and each base in the
     * entry's own segment (reclaiming a segment whole must never take a base a live version's chain reads, I8).
     */
    private static int walk(Pagelog volume, DiffChain links, long address) {
        int n = 0;
        for (long at = address; PagelogDescriptor.entryOffsetOf(at) != 0; n++) {
            int version = volume.versionOf(PagelogDescriptor.recordOf(at));
            long base = links.readEntry(volume, at, PAGE_ID, version).getLong(PagelogDescriptor.entryLayout(version).base());
            assertEquals(volume.pathOf(at), volume.pathOf(base), "the base of entry " + at + " lies in its segment");
            at = base;
        }
        return n;
    }
}
