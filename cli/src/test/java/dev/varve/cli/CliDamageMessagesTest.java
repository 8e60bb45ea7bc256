package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.engine.FixtureStores;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the tool says of damage to a file's header or a log record: what is wrong there (a checksum that fails), not
 * a consequence misread as something else (a wrong size, a newer format), and the same for {@code verify} as for the
 * commands that open the store ({@code info}, {@code scan}): the same record number, and each offset said once.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliDamageMessagesTest {
    @TempDir
    static Path tmp;
    /** Closed cleanly, with WAL segments of 4 MiB (the default is 64 MiB). */
    static Path healthy;
    /** Crashed while a checkpoint wrote its pages, in CHECKPOINT_RECOVERY_FILE mode: its recovery files are read at open. */
    static Path mid;

    @BeforeAll
    static void stores() {
        healthy = tmp.resolve("healthy");
        mid = tmp.resolve("mid");
        FixtureStores.create(healthy, "healthy");
        FixtureStores.create(mid, "midcheckpoint");
    }

    private static void flip(Path file, long offset) throws IOException {
        StoreCopy.flip(file, offset, 0xff);
    }

    /** The damage {@code verify --json} names in {@code file}. */
    private static List<CliRun.Damage> verified(Path store, Path file) {
        CliRun r = CliRun.of("verify", "--json", store.toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        return r.damage().stream().filter(d -> Path.of(d.file()).equals(file)).toList();
    }

    /** What {@code info} and {@code scan} say on standard error when the store does not open; the same for both. */
    private static String openFailure(Path store) {
        CliRun info = CliRun.of("info", store.toString());
        CliRun scan = CliRun.of("scan", store.toString(), "--table", "orders");
        assertEquals(Main.UNUSABLE, info.code(), info.toString());
        assertEquals(Main.UNUSABLE, scan.code(), scan.toString());
        assertEquals(info.err(), scan.err());
        return info.err();
    }

    /**
     * A flipped byte anywhere in a WAL segment's header (offsets 0 to 33) of a store with 4 MiB segments is the
     * header's CRC mismatch. The segment size is read from that header, so the tool fell back to the default 64 MiB:
     * verify added "segment has 4194304 bytes, segments are 67108864", and open said "file size is not 67108864 bytes".
     */
    @Test
    void aDamagedWalSegmentHeaderIsItsChecksumNotTheDefaultSegmentSize() throws IOException {
        for (long at : new long[]{0, 10, 20, 33}) {
            Path s = StoreCopy.under(healthy, tmp);
            Path segment = s.resolve("wal/wal-0000000000000000.seg");
            flip(segment, at);
            List<CliRun.Damage> d = verified(s, segment);
            assertEquals(1, d.size(), "at " + at + ": " + d);
            assertEquals(0, d.get(0).offset(), "at " + at + ": " + d);
            assertTrue(d.get(0).what().contains("CRC mismatch") || d.get(0).what().contains("bad magic"), "at " + at + ": " + d);
            String open = openFailure(s);
            assertFalse(open.contains("67108864"), "at " + at + ": " + open);
            assertTrue(open.contains("CRC mismatch") || open.contains("bad magic"), "at " + at + ": " + open);
            assertTrue(open.contains(segment.toString()), "at " + at + ": " + open);
        }
    }

    /**
     * A flipped byte in a recovery file's header is its checksum mismatch, named at the checksum's field (offset 24):
     * the version was read before the checksum, and the damage reported as "unsupported recovery file version 5898241".
     */
    @Test
    void aDamagedRecoveryFileHeaderIsItsChecksumNotAnotherVersion() throws IOException {
        Path s = StoreCopy.under(mid, tmp);
        Path file;
        try (Stream<Path> l = Files.list(s.resolve("checkpoints"))) {
            file = l.filter(p -> p.getFileName().toString().endsWith("-recovery-01.bin")).findFirst().orElseThrow();
        }
        flip(file, 10); // the version field
        List<CliRun.Damage> d = verified(s, file);
        assertEquals(1, d.size(), d.toString());
        assertEquals(24, d.get(0).offset(), d.toString());
        assertEquals("recovery file header checksum mismatch", d.get(0).what());
        String open = openFailure(s);
        assertTrue(open.contains("recovery file header checksum mismatch at offset 24 [file " + file + "]"), open);
        assertFalse(open.contains("unsupported"), open);
    }

    /**
     * A damaged snapshot log record has one number: verify counted the base block (laid out like a record) as record
     * 0, so it named the record one higher than open, info and scan do.
     */
    @Test
    void verifyAndOpenNumberSnapshotLogRecordsAlike() throws IOException {
        Path s = StoreCopy.under(healthy, tmp);
        Path log = s.resolve("archive/snapshots.log");
        long record1 = 16 + 48 + 48; // header, base block, record 0
        flip(log, record1 + 9);
        List<CliRun.Damage> d = verified(s, log);
        assertEquals(1, d.size(), d.toString());
        assertEquals(record1, d.get(0).offset(), d.toString());
        assertEquals("record 1 CRC32C mismatch", d.get(0).what());
        String open = openFailure(s);
        assertTrue(open.contains("record 1 is damaged at offset " + record1), open);

        s = StoreCopy.under(healthy, tmp);
        log = s.resolve("archive/snapshots.log");
        flip(log, 16 + 9);
        d = verified(s, log);
        assertEquals(1, d.size(), d.toString());
        assertEquals(16, d.get(0).offset(), d.toString());
        assertEquals("base block CRC32C mismatch", d.get(0).what());
    }

    /**
     * A damaged record of archive-marks.log followed by a valid one says each offset once, each with what lies there:
     * it read "...a valid record follows at offset 128 at offset 96".
     */
    @Test
    void aDamagedArchiveMarkSaysEachOffsetOnce() throws IOException {
        Path s = StoreCopy.under(healthy, tmp);
        Path log = s.resolve("archive/archive-marks.log");
        flip(log, 32 + 2 * 32 + 4); // record 2 of 32 bytes, after a 32-byte header
        List<CliRun.Damage> d = verified(s, log);
        assertEquals(1, d.size(), d.toString());
        assertEquals("record 2 CRC32C mismatch", d.get(0).what());
        String open = openFailure(s);
        assertTrue(open.contains("archive log holds valid record 3 (offset 128) after damaged record 2 at offset 96 [file " + log + "]"), open);
        assertFalse(open.matches("(?s).*at offset \\d+ at offset.*"), open);
    }
}
