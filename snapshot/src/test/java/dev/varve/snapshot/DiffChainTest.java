package dev.varve.snapshot;

import dev.varve.config.ConfigLimits;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.Page;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Diff capture's chains in a Pagelog volume: random page histories, each version archived as a diff against the one
 * before while the chain is under the bound and as a whole page after, read back exactly at every version — chains
 * of every length up to the bound, across packs and segments, before and after a reopen; whole-segment reclamation
 * keeping the segment a live diff's chain ends in; and damage anywhere on a chain named, never served.
 */
@Timeout(120)
class DiffChainTest {
    private static final int PAGE = 4096;
    private static final int CHUNK = PAGE / Page.CHUNKS;
    private static final long SEGMENT = 16L * (PAGE + PagelogDescriptor.RECORD_HEADER_SIZE) + PagelogDescriptor.HEADER_SIZE; // 16 records
    /** Segments long enough for chains of the default bound over several pages, short enough that chains meet their end. */
    private static final long LONG_SEGMENT = 128L * (PAGE + PagelogDescriptor.RECORD_HEADER_SIZE) + PagelogDescriptor.HEADER_SIZE;
    private static final FileIOFactory IO = FileIOFactory.standard();

    @TempDir
    Path dir;

    /** One archived version of a page: its address and image. */
    private record Version(long pageId, long address, long head, byte[] image, int chain) {
    }

    @Test
    void everyVersionOfRandomHistoriesReadsBackExactlyAtEveryChainLength() throws IOException {
        for (int bound : new int[] {1, 3, ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT}) {
            Path d = Files.createDirectories(dir.resolve("bound-" + bound));
            List<Version> versions;
            try (Pagelog log = new Pagelog(IO, d, PAGE, LONG_SEGMENT)) {
                versions = writeHistories(log, new SplittableRandom(bound), 6, 8 * (bound + 1), bound);
                log.force();
                assertReadsBack(log, versions, false); // oldest first: each chain walked back to the version read before it
            }
            int longest = versions.stream().mapToInt(Version::chain).max().orElseThrow();
            assertEquals(bound, longest, "chains of every length up to the bound were written");
            for (int c = 0; c <= bound; c++) {
                int length = c;
                assertTrue(versions.stream().anyMatch(v -> v.chain() == length), "a chain of length " + c);
            }
            try (Pagelog log = new Pagelog(IO, d, PAGE, LONG_SEGMENT)) { // from the files alone
                assertReadsBack(log, versions, true); // newest first: every chain walked back to its head
                assertReadsBack(log, versions, false); // and every version again, as it was kept
            }
        }
    }

    /** The longest bound an open may set: a chain of exactly that many links reads back, from the files alone too. */
    @Test
    void aChainAtTheLargestBoundReadsBack() {
        int bound = ConfigLimits.SNAPSHOT_DIFF_CHAIN_MAX;
        List<Version> versions;
        try (Pagelog log = new Pagelog(IO, dir, PAGE, LONG_SEGMENT)) {
            versions = writeHistories(log, new SplittableRandom(17), 1, bound + 1, bound);
            log.force();
        }
        assertEquals(bound, versions.stream().mapToInt(Version::chain).max().orElseThrow(), "a chain of the bound was written");
        try (Pagelog log = new Pagelog(IO, dir, PAGE, LONG_SEGMENT)) {
            assertReadsBack(log, versions, true); // the newest first: its whole chain walked back to the head
        }
    }

    /**
     * Entries longer than a link's first read (1,200 changed bytes each, read again whole) on a chain of 40 whose
     * links together outgrow the reading thread's first buffer: every version reads back, from the files alone.
     */
    @Test
    void aChainOfEntriesLongerThanTheFirstReadReadsBack() {
        SplittableRandom random = new SplittableRandom(23);
        List<Version> versions = new ArrayList<>();
        byte[] page = randomPage(random);
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, LONG_SEGMENT)) {
            image.put(0, page);
            long head = log.append(1, 0, 1, image, 0);
            versions.add(new Version(1, head, head, page.clone(), 0));
            for (int step = 1; step <= 40; step++) {
                int from = CHUNK * random.nextInt((PAGE - 1200) / CHUNK);
                for (int b = from; b < from + 1200; b++) page[b] = (byte) random.nextInt();
                image.put(0, page);
                Version last = versions.get(versions.size() - 1);
                long address = log.appendDiff(1, step, step + 1, last.address(), head, chunks(from, from + 1200), image, 0);
                assertTrue(Pagelog.isDiff(address), "a diff, in one segment");
                versions.add(new Version(1, address, head, page.clone(), step));
            }
            log.writeStaged();
            versions = resolved(log, versions);
            log.force();
        }
        try (Pagelog log = new Pagelog(IO, dir, PAGE, LONG_SEGMENT)) {
            assertReadsBack(log, versions, true); // the newest first: 40 long links walked back to the head
            assertReadsBack(log, versions, false);
        }
    }

    /**
     * Reclamation moving forward through random histories in segments of 16 records (chains restart whole in each,
     * packs end at a segment's last record): after each step every version a live snapshot needs still reads back,
     * with the pages rebuilt before kept and again from the files alone.
     */
    @Test
    void everyVersionALiveSnapshotNeedsReadsBackAsReclamationMovesOn() {
        List<Version> versions;
        List<Version> needed;
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            versions = writeHistories(log, new SplittableRandom(23), 5, 40, 7); // version i needs snapshot i + 1 alone
            log.force();
            needed = versions;
            for (int oldestLive = 1; oldestLive <= versions.size(); oldestLive += 17) {
                long oldest = oldestLive;
                log.reclaimOldest(Long.MAX_VALUE, (lo, hi) -> hi < oldest);
                needed = versions.subList(oldestLive - 1, versions.size());
                assertReadsBack(log, needed, false);
            }
            assertFalse(log.holds(versions.get(0).address()), "segments were reclaimed");
        }
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            assertReadsBack(log, needed, true);
        }
    }

    @Test
    void aLiveDiffsBaseIsNeverReclaimed() {
        List<Version> versions = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(5);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            byte[] page = randomPage(random);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            image.put(0, page);
            long head = log.append(1, 0, 1, image, 0); // snapshot 1 needs the whole page, and nothing after it does
            versions.add(new Version(1, head, head, page.clone(), 0));
            long[] changed = change(random, page);
            image.put(0, page);
            long near = log.appendDiff(1, 1, 4, head, head, changed, image, 0); // snapshots 2..4 need it, so its base too
            versions.add(new Version(1, near, head, page.clone(), 1));
            assertTrue(Pagelog.isDiff(near), "in the same segment as its base: a diff");
            for (int i = 0; i < 40; i++) log.append(100 + i, 0, 1, ByteBuffer.allocateDirect(PAGE), 0); // segments 0-2, expired
            changed = change(random, page);
            image.put(0, page);
            long far = log.appendDiff(1, 4, 9, near, head, changed, image, 0); // snapshots 5..9 need it; its base is two segments back
            versions.add(new Version(1, far, far, page.clone(), 0));
            assertFalse(Pagelog.isDiff(far), "a chain never leaves its segment: stored whole");
            for (int i = 0; i < 20; i++) log.append(200 + i, 8, 9, ByteBuffer.allocateDirect(PAGE), 0);
            log.force();
            versions = resolved(log, versions);
        }
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            log.reclaimOldest(Long.MAX_VALUE, (lo, hi) -> !(lo < 3 && 3 <= hi)); // only snapshot 3 lives: the near diff
            assertTrue(log.holds(head(versions)), "the whole page snapshot 3's diff is rebuilt from stays");
            assertReadsBack(log, versions.subList(1, 3), true);
            log.reclaimOldest(Long.MAX_VALUE, (lo, hi) -> !(lo < 7 && 7 <= hi)); // only snapshot 7 lives: the whole copy
            assertFalse(log.holds(head(versions)), "the old chain went with its segment");
            assertReadsBack(log, versions.subList(2, 3), true);
        }
    }

    @Test
    void aPackSealedInItsSegmentsLastRecordLeavesNoChainAcrossTheBoundary() {
        SplittableRandom random = new SplittableRandom(13);
        int wideBytes = 31 * 64; // two entries of a range this long fill a pack
        long[] wide = chunks(0, wideBytes);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            byte[] page = randomPage(random);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            image.put(0, page);
            long head = log.append(1, 0, 1, image, 0);
            List<Version> versions = new ArrayList<>(List.of(new Version(1, head, head, page.clone(), 0)));
            long base = head;
            for (int i = 0; i < 2; i++) {
                for (int b = 0; b < wideBytes; b++) page[b] ^= (byte) 0xFF;
                image.put(0, page);
                base = log.appendDiff(1, 1, 2, base, head, wide, image, 0);
                versions.add(new Version(1, base, head, page.clone(), i + 1));
            }
            for (int r = 1; r < 15; r++) log.append(100 + r, 0, 1, ByteBuffer.allocateDirect(PAGE), 0); // records 1..14: the pack stays open
            for (int b = 0; b < wideBytes; b++) page[b] ^= (byte) 0xFF;
            image.put(0, page);
            long third = log.appendDiff(1, 2, 3, base, head, wide, image, 0); // no room: the pack takes record 15, the segment's last
            assertFalse(Pagelog.isDiff(third), "the next pack would lie in the next segment, away from its head: stored whole");
            versions.add(new Version(1, third, third, page.clone(), 0));
            log.force();
            assertReadsBack(log, resolved(log, versions), true);
        }
    }

    private static long head(List<Version> versions) {
        return versions.get(0).address();
    }

    @Test
    void aRebuiltPageIsNotServedOnceItsSegmentIsReclaimed() {
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            Version diff = writeHistories(log, new SplittableRandom(5), 1, 2, 3).get(1);
            assertTrue(PagelogDescriptor.entryOffsetOf(diff.address()) != 0, "a diff entry");
            for (int i = 0; i < 40; i++) log.append(100 + i, 0, 1, ByteBuffer.allocateDirect(PAGE), 0); // segments 0-2
            log.force();
            ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
            log.reader.read(diff.address(), diff.pageId(), dst, 0); // rebuilt and kept
            log.reclaimOldest(16, (lo, hi) -> true); // the chain goes with segment 0
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.reader.read(diff.address(), diff.pageId(), dst, 0));
            assertTrue(e.getMessage().contains("segment is gone"), e.getMessage()); // I8, whatever was kept
        }
    }

    @Test
    void aRebuiltPageIsNotServedForTheNewEntryAtItsAddressAfterRecoveryCutTheVolume() {
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            Version before = writeHistories(log, new SplittableRandom(5), 1, 2, 3).get(1);
            log.force();
            ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
            log.reader.read(before.address(), before.pageId(), dst, 0); // rebuilt and kept
            log.truncate(0);
            Version after = writeHistories(log, new SplittableRandom(6), 1, 2, 3).get(1);
            log.force();
            assertTrue(PagelogDescriptor.entryOffsetOf(after.address()) != 0, "a diff entry");
            assertEquals(before.address(), after.address(), "the same address names the new history's diff");
            log.reader.read(after.address(), after.pageId(), dst, 0);
            byte[] read = new byte[PAGE];
            dst.get(0, read);
            assertTrue(java.util.Arrays.equals(after.image(), read), "the new page, not the one rebuilt before the cut");
        }
    }

    @Test
    void damageAnywhereOnAChainIsNamedNeverServed() throws IOException {
        List<Version> versions;
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            versions = writeHistories(log, new SplittableRandom(9), 1, 4, 3);
            log.force();
        }
        Version newest = versions.get(3);
        assertEquals(3, newest.chain());
        Version middle = versions.get(2);
        long record = PagelogDescriptor.recordOf(middle.address());
        long at = PagelogDescriptor.HEADER_SIZE + record * (PAGE + PagelogDescriptor.RECORD_HEADER_SIZE) + PagelogDescriptor.IMAGE_OFFSET
                + PagelogDescriptor.entryOffsetOf(middle.address()) + PagelogDescriptor.RANGE_ENTRY.headerSize(); // the middle link's first range
        Path file = dir.resolve(PagelogDescriptor.fileName(0));
        flip(file, at);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.reader.read(newest.address(), newest.pageId(), dst, 0));
            assertEquals(file, e.file(), e.getMessage());
            assertTrue(e.getMessage().contains("diff entry checksum"), e.getMessage());
            log.reader.read(versions.get(1).address(), versions.get(1).pageId(), dst, 0); // the links before it still read
        }
    }

    @Test
    void aChangeTheTrackingMissedFailsTheRebuiltPagesChecksum() {
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            SplittableRandom random = new SplittableRandom(3);
            byte[] page = randomPage(random);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            image.put(0, page);
            long head = log.append(7, 0, 1, image, 0);
            page[5] ^= 1; // chunk 0 changes...
            page[CHUNK * 3] ^= 1; // ...and chunk 3
            image.put(0, page);
            long token = log.appendDiff(7, 1, 2, head, head, chunks(CHUNK * 3, CHUNK * 4), image, 0); // but the diff only carries chunk 3
            log.force();
            long diff = log.resolve(token);
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.reader.read(diff, 7, ByteBuffer.allocateDirect(PAGE), 0));
            assertTrue(e.getMessage().contains("fails its checksum"), e.getMessage());
        }
    }

    /**
     * Archives {@code steps} versions of each of {@code pages} pages, interleaved at random: the first of a page whole,
     * each next one a diff against the one before while its chain is under {@code bound}, then whole again (and whole
     * where the volume starts a new segment).
     */
    private static List<Version> writeHistories(Pagelog log, SplittableRandom random, int pages, int steps, int bound) {
        List<Version> versions = new ArrayList<>();
        byte[][] current = new byte[pages][];
        Version[] last = new Version[pages];
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        long snapshot = 0;
        for (int step = 0; step < steps * pages; step++) {
            int p = random.nextInt(pages);
            long[] changed = Page.allChanged();
            if (current[p] == null) current[p] = randomPage(random);
            else changed = change(random, current[p]);
            image.put(0, current[p]);
            snapshot++;
            Version v;
            if (last[p] == null || last[p].chain() >= bound) {
                long address = log.append(p, snapshot - 1, snapshot, image, 0);
                v = new Version(p, address, address, current[p].clone(), 0);
            } else {
                long address = log.appendDiff(p, snapshot - 1, snapshot, last[p].address(), last[p].head(), changed, image, 0);
                boolean whole = !Pagelog.isDiff(address); // its base lay in an earlier segment
                v = new Version(p, address, whole ? address : last[p].head(), current[p].clone(), whole ? 0 : last[p].chain() + 1);
            }
            versions.add(v);
            last[p] = v;
            if (random.nextInt(10) == 0) log.writeStaged(); // packs cut short, as a checkpoint or a small batch does
        }
        log.writeStaged();
        return resolved(log, versions);
    }

    /** The versions with the addresses their diffs got once their packs were sealed. */
    private static List<Version> resolved(Pagelog log, List<Version> versions) {
        List<Version> out = new ArrayList<>();
        for (Version v : versions) out.add(new Version(v.pageId(), log.resolve(v.address()), v.head(), v.image(), v.chain()));
        return out;
    }

    /** Changes 1-6 random chunks of {@code page} (a few bytes each); returns their mask. */
    private static long[] change(SplittableRandom random, byte[] page) {
        long[] mask = new long[Page.MASK_LONGS];
        for (int n = 1 + random.nextInt(6); n > 0; n--) {
            int chunk = random.nextInt(Page.CHUNKS);
            mask[chunk >>> 6] |= 1L << chunk;
            for (int b = random.nextInt(1, 9); b > 0; b--) page[chunk * CHUNK + random.nextInt(CHUNK)] = (byte) random.nextInt();
        }
        return mask;
    }

    /** The mask of the chunks bytes [from, to) lie in. */
    static long[] chunks(int from, int to) {
        long[] mask = new long[Page.MASK_LONGS];
        for (int c = from / CHUNK; c <= (to - 1) / CHUNK; c++) mask[c >>> 6] |= 1L << c;
        return mask;
    }

    private static byte[] randomPage(SplittableRandom random) {
        byte[] b = new byte[PAGE];
        random.nextBytes(b);
        return b;
    }

    private static void assertReadsBack(Pagelog log, List<Version> versions, boolean newestFirst) {
        ByteBuffer dst = ByteBuffer.allocateDirect(PAGE + 16);
        byte[] read = new byte[PAGE];
        for (int i = 0; i < versions.size(); i++) {
            Version v = versions.get(newestFirst ? versions.size() - 1 - i : i);
            log.reader.read(v.address(), v.pageId(), dst, 16);
            assertEquals(v.head(), log.reader.headOf(v.address(), v.pageId()));
            dst.get(16, read);
            assertTrue(java.util.Arrays.equals(v.image(), read), "page " + v.pageId() + " at " + v.address() + " (chain " + v.chain() + ")");
        }
    }

    private static void flip(Path file, long offset) throws IOException {
        assertTrue(Files.size(file) > offset);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, offset);
            b.put(0, (byte) (b.get(0) ^ 0x10));
            ch.write(b.flip(), offset);
        }
    }
}
