package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.engine.FixtureStores;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code varve verify} on damaged copies of real stores: for each kind of file (page file, WAL segment, checkpoint
 * marker, recovery file, Pagelog, Maplog, snapshot log) a flipped byte and a truncation are each named with the file
 * and the offset of the damaged page or record, with exit code 1, and verify changes none of the damaged files.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliDamageTest {
    private static final int PAGE = 4096;

    @TempDir
    static Path tmp;
    static Path healthy;
    static Path mid;

    @BeforeAll
    static void stores() {
        healthy = tmp.resolve("healthy");
        mid = tmp.resolve("mid");
        FixtureStores.create(healthy, "healthy");
        FixtureStores.create(mid, "midcheckpoint");
    }

    /** A fresh copy of {@code store}. */
    private static Path copy(Path store) throws IOException {
        return StoreCopy.under(store, tmp);
    }

    private static void flip(Path file, long offset) throws IOException {
        StoreCopy.flip(file, offset, 0x5a);
    }

    private static void truncate(Path file, long size) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
        }
    }

    private static Path first(Path dir, String prefix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).sorted().findFirst().orElseThrow(() -> new AssertionError("no " + prefix + "* in " + dir));
        }
    }

    /**
     * The path, relative to {@code store}, of its largest Pagelog segment: how many records each holds depends on how
     * many pre-states were archived as diffs, packed several to a record.
     */
    private static Path largestPagelog(Path store) throws IOException {
        try (Stream<Path> s = Files.walk(store.resolve("archive"))) {
            Path largest = s.filter(p -> p.getFileName().toString().startsWith("pagelog-")).max(java.util.Comparator.comparingLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            })).orElseThrow(() -> new AssertionError("no pagelog-* under " + store.resolve("archive")));
            return store.relativize(largest);
        }
    }

    /**
     * Runs verify on a damaged copy: exit 1, a damage naming {@code file} at an offset in [{@code from}, {@code to}],
     * and nothing on disk changed.
     */
    private static void expectDamage(Path store, Path file, long from, long to) {
        Map<String, String> before = DirectoryFingerprint.of(store);
        CliRun r = CliRun.of("verify", "--json", store.toString());
        assertEquals(before, DirectoryFingerprint.of(store), "verify changed the directory");
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        List<CliRun.Damage> d = r.damage();
        assertTrue(d.stream().anyMatch(x -> Path.of(x.file()).equals(file) && x.offset() >= from && x.offset() <= to),
                "no damage named in " + file + " at [" + from + ", " + to + "]: " + d);
    }

    /** The tool as a process (its main, System.exit and all): the exit code a script sees. */
    private static int exitCodeOfProcess(String... args) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(ChildJava.command(Main.class, args)).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "varve " + String.join(" ", args) + " did not finish");
        return p.exitValue();
    }

    @Test
    void aScriptSeesTheExitCodes() throws Exception {
        assertEquals(Main.OK, exitCodeOfProcess("verify", healthy.toString()));
        Path s = copy(healthy);
        flip(first(s.resolve("pages"), "t00001-p00002"), PAGE + 100);
        assertEquals(Main.DAMAGE, exitCodeOfProcess("verify", s.toString()));
        assertEquals(Main.UNUSABLE, exitCodeOfProcess("verify", tmp.resolve("nothing-here").toString()));
        assertEquals(Main.USAGE, exitCodeOfProcess("verify"));
    }

    @Test
    void pageFile() throws IOException {
        Path s = copy(healthy);
        Path f = first(s.resolve("pages"), "t00001-p00000");
        flip(f, 2L * PAGE + 700); // page index 1
        expectDamage(s, f, 2L * PAGE, 2L * PAGE);
        s = copy(healthy);
        f = first(s.resolve("pages"), "t00001-p00001");
        long size = Files.size(f);
        truncate(f, size - PAGE / 2);
        expectDamage(s, f, size - PAGE, size - PAGE);
    }

    @Test
    void walSegment() throws IOException {
        Path s = copy(healthy);
        Path f = first(s.resolve("wal"), "wal-");
        flip(f, 40 + 20); // inside the first record (its payload), which many follow
        expectDamage(s, f, 40, 40);
        flip(f, 50_000); // a second damage further on: the check goes on past the first, from the next valid record
        CliRun r = CliRun.of("verify", "--json", s.toString());
        Path segment = f;
        List<CliRun.Damage> inSegment = r.damage().stream().filter(x -> Path.of(x.file()).equals(segment)).toList();
        assertEquals(2, inSegment.size(), "both damaged records of the segment are named: " + r.damage());
        assertTrue(inSegment.get(0).what().contains("the next valid record starts at offset"), inSegment.toString());
        assertTrue(inSegment.get(1).offset() > 60 && inSegment.get(1).offset() <= 50_000, inSegment.toString());
        s = copy(healthy);
        f = first(s.resolve("wal"), "wal-");
        truncate(f, 100_000);
        expectDamage(s, f, 100_000, 100_000);
    }

    /** A standby's snapshot map: a line that fails its checksum before the last is named; so is a map that cannot be read. */
    @Test
    void standbySnapshotMap() throws IOException {
        Path s = copy(healthy);
        Path map = s.resolve("followed-snapshots.map");
        String header = "varve-standby-map 2\n";
        Files.writeString(map, header + "1 2 deadbeef\n3 4 deadbeef\n"); // the last line may be a torn append, the first not
        expectDamage(s, map, header.length(), header.length());
        s = copy(healthy);
        Files.createDirectory(s.resolve("followed-snapshots.map"));
        expectDamage(s, s.resolve("followed-snapshots.map"), 0, 0);
    }

    @Test
    void checkpointMarker() throws IOException {
        Path s = copy(healthy);
        Path f = first(s.resolve("checkpoints"), "cp-");
        flip(f, 20);
        expectDamage(s, f, 0, Files.size(f));
        s = copy(healthy);
        f = first(s.resolve("checkpoints"), "cp-");
        truncate(f, 10);
        expectDamage(s, f, 0, 10);
    }

    @Test
    void recoveryFile() throws IOException {
        Path s = copy(mid);
        Path f = first(s.resolve("checkpoints"), "cp-");
        try (Stream<Path> l = Files.list(s.resolve("checkpoints"))) {
            f = l.filter(p -> p.getFileName().toString().contains("-recovery-")).sorted().findFirst().orElseThrow();
        }
        long size = Files.size(f);
        flip(f, size / 2);
        expectDamage(s, f, 0, size / 2);
        s = copy(mid);
        Path g = s.resolve("checkpoints").resolve(f.getFileName());
        truncate(g, size / 2);
        expectDamage(s, g, 0, size / 2);
    }

    @Test
    void pagelog() throws IOException {
        int record = PAGE + 32;
        Path s = copy(healthy);
        Path f = s.resolve(largestPagelog(healthy));
        assertTrue(Files.size(f) >= 32 + 3L * record, f + " holds fewer than three records: " + Files.size(f) + " bytes");
        flip(f, 32 + record + 500); // record 1's image
        expectDamage(s, f, 32 + record, 32 + record);
        s = copy(healthy);
        f = s.resolve(largestPagelog(healthy));
        truncate(f, 32 + 2L * record + 100);
        expectDamage(s, f, 32 + 2L * record, 32 + 2L * record);
    }

    @Test
    void maplog() throws IOException {
        Path s = copy(healthy);
        Path f = s.resolve("archive/level-1/maplog-L0.log");
        flip(f, 32 + 2 * 32 + 3);
        expectDamage(s, f, 32 + 64, 32 + 64);
        s = copy(healthy);
        f = s.resolve("archive/level-1/maplog-L0.log");
        truncate(f, 32 + 3 * 32 + 7);
        expectDamage(s, f, 32 + 96, 32 + 96);
    }

    @Test
    void snapshotLog() throws IOException {
        Path s = copy(healthy);
        Path f = s.resolve("archive/snapshots.log");
        flip(f, 16 + 48 + 9);
        expectDamage(s, f, 16 + 48, 16 + 48);
        s = copy(healthy);
        f = s.resolve("archive/snapshots.log");
        truncate(f, 16 + 2 * 48 + 20);
        expectDamage(s, f, 16 + 96, 16 + 96);
    }
}
