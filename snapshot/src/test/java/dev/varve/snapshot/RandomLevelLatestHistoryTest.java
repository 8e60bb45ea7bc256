package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random histories in which upper levels' latest snapshots age out (keepFor on a clock the test moves; snapshot 1, at
 * the top rank, is counted at every level), or go over a byte budget, and the snapshot log's compaction lets their
 * records go, with pages changed after every declaration and reopens after about half the checkpoints: some lose
 * declarations made between the mark and the end marker whose drops that work wrote (a standalone archive: no WAL
 * holds a drop back until its cause is durable, so this is harsher than a store), some are killed again before the
 * next checkpoint, after declarations and captures past the recovered mark. After each reopen and a change of every
 * page, every level's Maplog is in snapshot order (I7: the archiver fails otherwise), and every live snapshot reads
 * each page, as an as-of view does, with the value a model of the writes has as of it.
 */
@Timeout(170)
class RandomLevelLatestHistoryTest {
    private static final int PAGES = 24;
    /** Pages 0..HOT-1 change often; the others rarely, so they are captured with an old SavedAfter after a reopen. */
    private static final int HOT = 6;

    @TempDir
    Path dir;

    private final long[] wall = {Duration.ofDays(20_000).toMillis()};
    /** Per page, its writes as {latest snapshot declared when written, value, WAL position}, oldest first. */
    private final List<List<long[]>> writes = new ArrayList<>();
    private long lsn = 1;
    private long value;
    private int opened;
    private Agents agents;

    private static RankTreePolicy policy(Random random) {
        Retention forTenMinutes = Retention.keepFor(Duration.ofMinutes(10));
        return switch (random.nextInt(3)) {
            case 0 -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(4)), forTenMinutes, Retention.keepAll());
            case 1 -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(4)), forTenMinutes, Retention.keepFor(Duration.ofMinutes(40)));
            default -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(4)), Retention.keepLast(1 + random.nextInt(3)), forTenMinutes,
                    Retention.keepAll());
        };
    }

    /** Seeds whose histories recovered an older latest at a level than its Maplog's last mapping before 9173eca2 (I7 failed). */
    @ParameterizedTest
    @ValueSource(longs = {1, 3, 7, 10})
    void everyLevelStaysInSnapshotOrderAndEverySnapshotReadsAsOfItsDeclarationAcrossReopens(long seed) {
        history(seed, false);
    }

    /** The same under a byte budget, which drops upper levels' latest snapshots too: seeds that failed I7 before 9173eca2. */
    @ParameterizedTest
    @ValueSource(longs = {10, 12})
    void underABudget(long seed) {
        history(seed, true);
    }

    @Tag("long")
    @ParameterizedTest
    @ValueSource(longs = {2, 4, 5, 6, 8, 9, 11, 12})
    void moreSeeds(long seed) {
        history(seed, false);
    }

    @Tag("long")
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11})
    void moreSeedsUnderABudget(long seed) {
        history(seed, true);
    }

    private void history(long seed, boolean budget) {
        Random random = new Random(seed);
        RankTreePolicy policy = budget ? policy(random).withBudget((1L << 20) + random.nextInt(3 << 20)) : policy(random);
        for (int p = 0; p < PAGES; p++) writes.add(new ArrayList<>());
        PageMemory memory = memory();
        SnapshotArchive a = open(memory, policy);
        int reopens = 0;
        try {
            a.recover(0, true);
            long declarations = 8_000 + random.nextInt(3_000);
            int upperEvery = 100 + random.nextInt(1_500);
            long nextMark = 50 + random.nextInt(300);
            for (long n = 1; n <= declarations; n++) {
                step(a, memory, random, policy, n == 1 ? 0 : upperEvery); // snapshot 1 at the top rank: every level counts it
                if (n < nextMark && n != declarations) continue;
                nextMark = n + 50 + random.nextInt(300);
                boolean reopen = random.nextBoolean() || n == declarations;
                long mark = lsn++;
                a.onMark(n, mark);
                a.beforeStartMarker(n, mark);
                // declared past the mark, their drops made durable by the end marker's work, their records then lost
                int lost = reopen && random.nextBoolean() ? 1 + random.nextInt(5) : 0;
                for (int k = 0; k < lost; k++) step(a, memory, random, policy, 3);
                a.afterEndMarker(n, mark);
                if (!reopen) continue;
                String at = "seed " + seed + " (" + policy + "), reopened after " + n + " declarations" + (lost > 0 ? ", " + lost + " lost" : "");
                reopens++;
                a.close();
                memory.close();
                memory = reopened(mark);
                a = open(memory, policy);
                a.recover(mark, false);
                if (random.nextInt(3) == 0) { // declarations and captures past the mark, then killed again before the next checkpoint
                    for (int k = random.nextInt(4); k > 0; k--) step(a, memory, random, policy, 3);
                    change(a, memory, random, PAGES);
                    archive();
                    a.close();
                    memory.close();
                    memory = reopened(mark);
                    a = open(memory, policy);
                    a.recover(mark, false);
                    at += ", twice";
                }
                change(a, memory, random, PAGES); // every page, the cold ones too: each level records what it lacks
                archive();
                assertReadsAsOf(a, memory, at);
            }
            assertTrue(a.dropHorizon() > 1, "the snapshot log's compaction let dropped snapshots go: horizon " + a.dropHorizon());
        } finally {
            a.close();
            memory.close();
        }
        assertTrue(reopens >= 3, "reopens: " + reopens);
    }

    /**
     * A declaration at a random rank (above 1 about one in {@code upperEvery}) as the clock moves on — now and then by
     * minutes, so keepFor ages snapshots out — sometimes a raise of a live snapshot, and writes to a few pages.
     */
    private void step(SnapshotArchive a, PageMemory memory, Random random, RankTreePolicy policy, int upperEvery) {
        int rank = upperEvery == 0 ? policy.levelCount() : random.nextInt(upperEvery) > 0 ? 1 : 2 + random.nextInt(policy.levelCount() - 1);
        wall[0] += random.nextInt(20) == 0 ? Duration.ofMinutes(3 + random.nextInt(10)).toMillis() : random.nextInt(1_000);
        a.declare(a.nextId(), rank, wall[0], lsn++);
        if (random.nextInt(200) == 0) { // a raise of a live snapshot: a page window of 0 copies it at the next mark
            List<SnapshotRecord> live = a.snapshots();
            SnapshotRecord r = live.get(random.nextInt(live.size()));
            if (r.rank() < policy.levelCount()) a.rank(r.id(), r.rank() + 1, lsn++);
        }
        change(a, memory, random, 1 + random.nextInt(3));
        archive();
    }

    /** Page memory after a crash recovered from {@code mark}: the writes after it were lost with the WAL's tail. */
    private PageMemory reopened(long mark) {
        for (List<long[]> w : writes) w.removeIf(x -> x[2] > mark);
        return memory();
    }

    /** Opens the archive with an archiver the test steps ({@link #archive}), on agents of its own: a closed one's go with it. */
    private SnapshotArchive open(PageMemory memory, RankTreePolicy policy) {
        agents = Agents.invoked();
        SnapshotArchive a = new SnapshotArchive(UnforcedFileIOFactory.INSTANCE, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096)
                .skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
        a.useAgents(agents);
        a.wallClock(() -> wall[0]);
        a.attach(memory);
        return a;
    }

    /** Page memory holding every page as the model has it now, written before the archive is attached (as if read from its file). */
    private PageMemory memory() {
        PageMemory memory = new PageMemory(new PageStore(UnforcedFileIOFactory.INSTANCE, dir.resolve("pages-" + opened++), 4096), 8L << 20, 1L << 20);
        for (int p = 0; p < PAGES; p++) {
            Page page = memory.acquireNew(PageId.of(1, p));
            List<long[]> w = writes.get(p);
            page.putLong(64, w.isEmpty() ? 0 : w.get(w.size() - 1)[1]);
            memory.releaseWrite(page);
        }
        return memory;
    }

    /** Writes a new value to {@code count} pages, mostly hot ones (all of them when {@code count} is every page). */
    private void change(SnapshotArchive a, PageMemory memory, Random random, int count) {
        for (int i = 0; i < count; i++) {
            int p = count == PAGES ? i : random.nextInt(50) == 0 ? HOT + random.nextInt(PAGES - HOT) : random.nextInt(HOT);
            Page page = memory.acquireWrite(PageId.of(1, p));
            page.putLong(64, ++value);
            memory.releaseWrite(page);
            writes.get(p).add(new long[]{a.latest(), value, lsn++});
        }
    }

    /** Archives every capture pending: an archiver failure (I7 among them) is thrown here. */
    private void archive() {
        while (agents.invoker("archiver").invoke() > 0) {
            // until none is left
        }
    }

    /** Every live snapshot reads each page, as an as-of view does, with the value last written before it was declared. */
    private void assertReadsAsOf(SnapshotArchive a, PageMemory memory, String at) {
        for (SnapshotRecord r : a.snapshots()) {
            try (AsOfPages view = AsOfPages.open(a, memory, r)) {
                for (int p = 0; p < PAGES; p++) {
                    long want = 0;
                    for (long[] w : writes.get(p)) if (w[0] < r.id()) want = w[1];
                    Page page = view.acquireRead(PageId.of(1, p));
                    long got = page.getLong(64);
                    view.releaseRead(page);
                    assertEquals(want, got, at + ": snapshot " + r.id() + " (rank " + r.rank() + ", read level " + a.readLevel(r.id()) + ") page " + p);
                }
            }
        }
    }
}
