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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An FSYNC WAL's force cut short by the kill of the process, the way the kernel does it (a write stops at a page
 * boundary when a fatal signal is pending), in any of the writes a staged segment's force makes (one or more of
 * the copy with the lengths zero, then one of the range whole): the WAL then opens under every sync mode — a store
 * written under FSYNC may be reopened under LOG_ONLY, whose scan takes a record with its length and a bad body for damage — with every record forced before, whole, and at
 * most a prefix of the cut force's records.
 */
@Timeout(120)
class WalStagedWriteCutTest {
    private static final int PAGE = 4096;
    /** Room for a force of more than one copy's worth (WalSegment writes the lengths-zeroed copy 64 KiB at a time). */
    private static final long SEGMENT = 1 << 20;

    @TempDir
    Path dir;

    /** Cuts the {@code cutAt}-th write to a segment file after arming at the next page boundary, then fails every call. */
    private static final class KilledMidWrite extends ForwardingFileIOFactory {
        int cutAt = -1;
        int writes;
        boolean killed;

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = delegate.open(file, create);
            if (!file.getFileName().toString().endsWith(".seg")) return f;
            return new ForwardingFileIO(f) {
                @Override
                public void write(ByteBuffer src, long position) throws IOException {
                    if (killed) throw new IOException("the process is gone");
                    if (cutAt > 0 && ++writes == cutAt) {
                        int keep = (int) Math.min(src.remaining(), (position / PAGE + 1) * PAGE - position);
                        delegate.write(src.duplicate().limit(src.position() + keep), position);
                        killed = true;
                        throw new IOException("killed after " + keep + " of " + src.remaining() + " bytes");
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
    void aForceCutAtAPageBoundaryInAnyOfItsWritesLeavesATornTailEveryModeCuts() throws IOException {
        Random rnd = WalTestSupport.seeded("stagedWriteCut");
        // 3 pages go out in two writes; 150 KiB in three of the lengths-zeroed copy and one whole
        for (int unforced : new int[] {3 * PAGE, 150 << 10}) {
            for (int cutAt = 1; ; cutAt++) {
                String name = unforced + "-bytes-cut-in-write-" + cutAt;
                Path crashed = Files.createDirectories(dir.resolve(name));
                List<byte[]> forced = new ArrayList<>();
                List<byte[]> cut = new ArrayList<>();
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
                    bytes += p.length;
                }
                io.cutAt = cutAt;
                try {
                    wal.commit(last);
                } catch (StorageException killed) {
                    // the force was cut in its cutAt-th write
                }
                try {
                    wal.close();
                } catch (RuntimeException expected) {
                    // the process is gone: nothing more reaches the files
                }
                if (!io.killed) {
                    assertTrue(cutAt > 2, "a force writes at least twice");
                    break; // the force had fewer writes: every one of them was cut once
                }
                for (WalSyncMode mode : WalSyncMode.values()) assertReopens(crashed, dir.resolve(name + "-reopened-" + mode), mode, forced, cut);
            }
        }
    }

    /** Reopens a copy of {@code crashed} under {@code mode}: the forced records whole, then a prefix of the cut ones. */
    private static void assertReopens(Path crashed, Path copy, WalSyncMode mode, List<byte[]> forced, List<byte[]> cut) throws IOException {
        Files.createDirectories(copy);
        try (var files = Files.list(crashed)) {
            for (Path f : files.toList()) Files.copy(f, copy.resolve(f.getFileName()));
        }
        Duration flush = mode == WalSyncMode.BACKGROUND ? Duration.ofSeconds(1) : null;
        try (Wal reopened = Wal.open(WalOpenScan.run(FileIOFactory.standard(), copy, SEGMENT, mode, -1, false), flush)) {
            List<WalTestSupport.Rec> read = WalTestSupport.readAll(reopened, reopened.firstLsn());
            String what = copy.getFileName() + ": " + read.size() + " records";
            assertTrue(read.size() >= forced.size() && read.size() <= forced.size() + cut.size(), what);
            for (int i = 0; i < read.size(); i++) {
                assertArrayEquals(i < forced.size() ? forced.get(i) : cut.get(i - forced.size()), read.get(i).payload(), what + ", record " + i);
            }
            assertTrue(reopened.tailCut().isPresent() || read.size() == forced.size() + cut.size(), what + ": the torn part is cut");
        }
    }
}
