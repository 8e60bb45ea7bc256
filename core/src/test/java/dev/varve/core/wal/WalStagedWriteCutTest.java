package dev.varve.core.wal;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An FSYNC WAL's force cut short by the kill of the process, the way the kernel does it (a write stops at a page
 * boundary when a fatal signal is pending), at every page boundary of the one write a staged segment's force makes:
 * the WAL then opens under every sync mode — a store written under FSYNC may be reopened under LOG_ONLY, whose own
 * rule takes a record with its length and a bad body for damage, so the segment's tail must be judged by FSYNC's —
 * with every record forced before, whole, and the cut force's records that lay wholly before the cut.
 */
@Timeout(120)
class WalStagedWriteCutTest {
    private static final int PAGE = 4096;
    private static final long SEGMENT = 1 << 20;

    @TempDir
    Path dir;

    /**
     * Once armed, cuts the next write to a segment file after its {@code cutPages}-th page boundary (unless it ends
     * before that), then fails every call; counts the writes made since arming.
     */
    private static final class KilledMidWrite extends ForwardingFileIOFactory {
        int cutPages = -1;
        int writes;
        boolean killed;
        /** Where the cut write stopped, once killed. */
        long cutEnd;

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = delegate.open(file, create);
            if (!file.getFileName().toString().endsWith(".seg")) return f;
            return new ForwardingFileIO(f) {
                @Override
                public void write(ByteBuffer src, long position) throws IOException {
                    if (killed) throw new IOException("the process is gone");
                    if (cutPages > 0 && ++writes == 1) {
                        long keep = (position / PAGE + cutPages) * PAGE - position;
                        if (keep < src.remaining()) {
                            delegate.write(src.duplicate().limit(src.position() + (int) keep), position);
                            killed = true;
                            cutEnd = position + keep;
                            throw new IOException("killed after " + keep + " of " + src.remaining() + " bytes");
                        }
                    }
                    delegate.write(src, position);
                }

                @Override
                public void force() throws IOException {
                    if (killed) throw new IOException("the process is gone");
                    delegate.force();
                }
            };
        }
    }

    @Test
    void aForceCutAtAnyPageBoundaryOfItsWriteLeavesATornTailEveryModeCuts() throws IOException {
        Random rnd = WalTestSupport.seeded("stagedWriteCut");
        // within a page of the last force's end, and across many pages, so the cut falls inside records
        for (int unforced : new int[] {3 * PAGE, 150 << 10}) {
            for (int cutPages = 1; ; cutPages++) {
                String name = unforced + "-bytes-cut-after-page-" + cutPages;
                Path crashed = Files.createDirectories(dir.resolve(name));
                List<byte[]> forced = new ArrayList<>();
                List<byte[]> cut = new ArrayList<>();
                List<Long> cutLsns = new ArrayList<>();
                KilledMidWrite io = new KilledMidWrite();
                Wal wal = Wal.open(crashed, io, SEGMENT, WalSyncMode.FSYNC, null);
                for (int i = 0; i < 5; i++) {
                    byte[] p = WalTestSupport.randomBytes(rnd, 100 + rnd.nextInt(400));
                    wal.commit(wal.append(7, ByteBuffer.wrap(p)));
                    forced.add(p);
                }
                long last = -1;
                for (int bytes = 0; bytes < unforced; ) { // records across pages, so the cut falls inside one
                    byte[] p = WalTestSupport.randomBytes(rnd, 300 + rnd.nextInt(700));
                    last = wal.append(7, ByteBuffer.wrap(p));
                    cut.add(p);
                    cutLsns.add(last);
                    bytes += p.length;
                }
                io.cutPages = cutPages;
                try {
                    wal.commit(last);
                } catch (StorageException killed) {
                    // the force's write was cut after cutPages page boundaries
                }
                try {
                    wal.close();
                } catch (RuntimeException expected) {
                    // the process is gone: nothing more reaches the files
                }
                if (!io.killed) {
                    assertEquals(1, io.writes, "a force writes its range once");
                    assertTrue(cutPages > 1, "the force was cut at least once");
                    break; // the write ended before this boundary: it was cut at every one
                }
                int kept = 0; // the cut force's records wholly before the cut; one the cut falls inside has its length
                boolean torn = false;
                for (int i = 0; i < cut.size(); i++) {
                    long start = WalSegmentDescriptor.offset(cutLsns.get(i), SEGMENT);
                    long end = start + WalSegmentDescriptor.RECORD_HEADER_SIZE + cut.get(i).length;
                    if (end <= io.cutEnd) kept++;
                    torn |= start < io.cutEnd && io.cutEnd < end;
                }
                for (WalSyncMode mode : WalSyncMode.values()) {
                    assertReopens(crashed, dir.resolve(name + "-reopened-" + mode), mode, forced, cut.subList(0, kept), torn);
                }
            }
        }
    }

    /**
     * Reopens a copy of {@code crashed} under {@code mode}: the forced records whole, then exactly the {@code kept} ones,
     * and a tail cut when a record was {@code torn} (a cut on a record boundary leaves a clean end).
     */
    private static void assertReopens(Path crashed, Path copy, WalSyncMode mode, List<byte[]> forced, List<byte[]> kept,
                                      boolean torn) throws IOException {
        Files.createDirectories(copy);
        try (var files = Files.list(crashed)) {
            for (Path f : files.toList()) Files.copy(f, copy.resolve(f.getFileName()));
        }
        Duration flush = mode == WalSyncMode.BACKGROUND ? Duration.ofSeconds(1) : null;
        try (Wal reopened = Wal.open(WalOpenScan.run(FileIOFactory.standard(), copy, SEGMENT, mode, -1, false), flush)) {
            List<WalTestSupport.Rec> read = WalTestSupport.readAll(reopened, reopened.firstLsn());
            String what = copy.getFileName() + ": " + read.size() + " records";
            assertEquals(forced.size() + kept.size(), read.size(), what);
            for (int i = 0; i < read.size(); i++) {
                assertArrayEquals(i < forced.size() ? forced.get(i) : kept.get(i - forced.size()), read.get(i).payload(), what + ", record " + i);
            }
            assertEquals(torn, reopened.tailCut().isPresent(), what + ": the torn record is cut");
        }
    }
}
