package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.engine.FixtureStores;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The new store of {@code load}, {@code backup DIR} and {@code salvage} is built under {@code NEWDIR/.incoming} and
 * moved into place only when whole: a run killed half-way leaves a directory that every command refuses as an
 * unfinished transfer, and running the command again completes it. A {@code dump} file likewise gets its name only when
 * whole: a dump killed half-way leaves nothing under that name, and a rerun writes it.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliStagedTargetTest {
    private static final int ENTRIES = 60_000;

    @TempDir
    static Path tmp;
    static Path healthy;
    static Path big;
    static Path dump;

    @BeforeAll
    static void stores() {
        healthy = tmp.resolve("healthy");
        FixtureStores.create(healthy, "healthy");
        big = tmp.resolve("big");
        try (Varve v = Varve.open(SmallStore.fresh(big).build())) {
            for (int i = 0; i < ENTRIES; i += 100) {
                int from = i;
                v.write(b -> {
                    for (int k = from; k < from + 100; k++)
                        b.put("t", String.format("key-%06d", k).getBytes(StandardCharsets.UTF_8), ("value " + k + " ".repeat(100)).getBytes(StandardCharsets.UTF_8));
                });
            }
        }
        dump = tmp.resolve("big.dump");
        CliRun r = CliRun.of("dump", big.toString(), "--out", dump.toString());
        assertEquals(Main.OK, r.code(), r.toString());
    }

    private static void assertUnfinished(Path target) {
        for (String command : List.of("info", "verify")) {
            CliRun r = CliRun.of(command, target.toString());
            assertEquals(Main.UNUSABLE, r.code(), r.toString());
            assertTrue(r.err().contains("unfinished transfer") && r.err().contains("run the same backup, load or salvage again"), r.toString());
        }
        CliRun get = CliRun.of("get", target.toString(), "--table", "t", "key-000001");
        assertEquals(Main.UNUSABLE, get.code(), get.toString());
        assertTrue(get.err().contains("unfinished transfer"), get.toString());
    }

    private static long entries(Path store, String table) {
        try (Varve v = Varve.openReadOnly(StoreInspector.detectConfig(store)); dev.varve.engine.Cursor c = v.table(table).scan(null, null)) {
            long n = 0;
            while (c.next()) n++;
            return n;
        }
    }

    /**
     * Starts the tool with {@code args} in a child JVM, at the lowest CPU priority where {@code nice} exists: the tests
     * race it to kill it half-way, and on a busy machine (other test classes beside this one) the child must not
     * finish before this thread has seen it write.
     */
    private static Process toolInChild(String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        if (Files.isExecutable(Path.of("/usr/bin/nice"))) cmd.addAll(List.of("/usr/bin/nice", "-n", "19"));
        cmd.addAll(ChildJava.command(Main.class, args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    /**
     * Starts {@code varve load} of the dump into {@code target} in a child JVM and waits until it writes. No deadline
     * of its own but the class's timeout: at the lowest priority on a loaded machine the child may get no core for a
     * minute, and a test that went on before it wrote would kill a load that had not started and blame the target.
     */
    private static Process loadInChild(Path target) throws IOException, InterruptedException {
        Process p = toolInChild("load", dump.toString(), "--to", target.toString());
        // the store's WAL exists once the load writes: under .incoming, or (unstaged) at the top
        while (!Files.isDirectory(target.resolve(".incoming/wal")) && !Files.isDirectory(target.resolve("wal")) && p.isAlive())
            Thread.sleep(10);
        assertTrue(Files.isDirectory(target.resolve(".incoming/wal")) || Files.isDirectory(target.resolve("wal")),
                () -> "the load ended (exit " + p.exitValue() + ") before it wrote its target");
        return p;
    }

    @Test
    void loadKilledHalfWayLeavesAnUnfinishedTargetThatARerunCompletes() throws Exception {
        Path target = tmp.resolve("loaded");
        Process p = loadInChild(target);
        try {
            Thread.sleep(300); // some entries in
            assertTrue(p.isAlive(), "the load finished before it could be killed");
        } finally {
            p.destroyForcibly(); // SIGKILL: no cleanup of the load runs
            p.waitFor(30, TimeUnit.SECONDS);
        }
        assertUnfinished(target);

        CliRun rerun = CliRun.of("load", dump.toString(), "--to", target.toString());
        assertEquals(Main.OK, rerun.code(), rerun.toString());
        assertFalse(Files.exists(target.resolve(".incoming")));
        assertEquals(ENTRIES, entries(target, "t"));
        CliRun verify = CliRun.of("verify", target.toString());
        assertEquals(Main.OK, verify.code(), verify.toString());
    }

    @Test
    void aSecondLoadIntoATargetBeingLoadedIsRefusedAndTheFirstCompletes() throws Exception {
        Path target = tmp.resolve("raced");
        Process first = loadInChild(target);
        try {
            assertTrue(first.isAlive(), "the first load finished before the second could race it");
            CliRun second = CliRun.of("load", dump.toString(), "--to", target.toString());
            assertEquals(Main.UNUSABLE, second.code(), second.toString());
            assertTrue(second.err().contains("in use by another process"), second.toString());
            assertEquals(0, first.waitFor(), "the first load failed after the second was refused");
        } finally {
            first.destroyForcibly();
            first.waitFor(30, TimeUnit.SECONDS);
        }
        assertEquals(ENTRIES, entries(target, "t"));
        CliRun verify = CliRun.of("verify", target.toString());
        assertEquals(Main.OK, verify.code(), verify.toString());
    }

    /** The regular files directly in {@code dir}. */
    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile).toList();
        }
    }

    /** True when some file in {@code dir} has bytes: the dump has started writing (whatever name it writes under). */
    private static boolean writing(Path dir) throws IOException {
        for (Path f : files(dir)) {
            try {
                if (Files.size(f) > 0) return true;
            } catch (NoSuchFileException renamed) {
                // moved to its name meanwhile: the next look sees it
            }
        }
        return false;
    }

    @Test
    void dumpKilledHalfWayLeavesNoFileUnderItsNameAndARerunWritesIt() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("dump-killed"));
        Path target = dir.resolve("big.dump");
        Process p = toolInChild("dump", big.toString(), "--out", target.toString());
        try {
            while (!writing(dir) && p.isAlive()) Thread.sleep(1); // the first 64 KiB of several MiB are out
        } finally {
            p.destroyForcibly(); // SIGKILL: no cleanup of the dump runs
            p.waitFor(30, TimeUnit.SECONDS);
        }
        assertTrue(p.exitValue() != Main.OK, "the dump finished before it could be killed");
        assertFalse(Files.exists(target), "a killed dump left a file under its name: " + files(dir));
        List<Path> left = files(dir);
        assertEquals(1, left.size(), left.toString());
        assertTrue(left.get(0).getFileName().toString().endsWith(StagedFile.SUFFIX), left.toString());

        CliRun rerun = CliRun.of("dump", big.toString(), "--out", target.toString());
        assertEquals(Main.OK, rerun.code(), rerun.toString());
        assertEquals(ENTRIES, DumpFile.read(target, null));
        Path loaded = tmp.resolve("dump-killed-loaded");
        CliRun load = CliRun.of("load", target.toString(), "--to", loaded.toString());
        assertEquals(Main.OK, load.code(), load.toString());
        assertEquals(ENTRIES, entries(loaded, "t"));
    }

    /**
     * Two {@code varve dump} processes writing one name at once: whichever finishes second is refused as a dump started
     * after the first finished is (exit 64, "exists"), and the file is one whole dump. Both passed the check for an
     * existing file at their start, and the rename that published each replaced the name, so both exited 0.
     */
    @Test
    void twoDumpsToOneNameAtOnceTheSecondToFinishIsRefused() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("dump-race"));
        Path target = dir.resolve("same.dump");
        List<Process> runs = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Path log = tmp.resolve("dump-race-" + i + ".log");
            logs.add(log);
            runs.add(new ProcessBuilder(ChildJava.command(Main.class, "dump", big.toString(), "--out", target.toString()))
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start());
        }
        List<Integer> codes = new ArrayList<>();
        StringBuilder said = new StringBuilder();
        for (int i = 0; i < 2; i++) {
            assertTrue(runs.get(i).waitFor(3, TimeUnit.MINUTES), "dump " + i + " did not finish");
            codes.add(runs.get(i).exitValue());
            said.append("--- dump ").append(i).append(" exit ").append(runs.get(i).exitValue()).append(":\n").append(Files.readString(logs.get(i)));
        }
        assertEquals(List.of(Main.OK, Main.USAGE), codes.stream().sorted().toList(), said.toString());
        Path refused = logs.get(codes.indexOf(Main.USAGE));
        assertTrue(Files.readString(refused).contains(target + " exists; dump writes a new file"), said.toString());
        assertEquals(ENTRIES, DumpFile.read(target, null));
        assertEquals(List.of(target), files(dir), "the refused dump's temporary file is removed");
    }

    /** What a killed {@code backup} or {@code salvage} leaves: part of a store under the unfinished mark. */
    private static Path cutShort(String name) throws IOException {
        Path target = tmp.resolve(name);
        Files.createDirectories(target.resolve(".incoming/wal"));
        Files.writeString(target.resolve(".incoming/wal/junk"), "cut short");
        return target;
    }

    @Test
    void backupAndSalvageRerunOverAKilledRunAndLeaveNoMark() throws IOException {
        Map<String, TreeMap<String, String>> want = CliReadCommandsTest.hex(FixtureStores.model(FixtureStores.ROUNDS));
        for (String command : List.of("backup", "salvage")) {
            Path target = cutShort(command + "-cut");
            assertUnfinished(target);
            CliRun r = CliRun.of(command, healthy.toString(), "--to", target.toString());
            assertEquals(Main.OK, r.code(), r.toString());
            assertFalse(Files.exists(target.resolve(".incoming")), command);
            assertFalse(Files.exists(target.resolve("wal/junk")), command);
            try (Varve v = Varve.open(SmallStore.config(target).build())) {
                assertEquals(want, CliReadCommandsTest.contents(v::table), command);
            }
        }
    }

    @Test
    void aNonEmptyTargetWithoutTheMarkIsStillRefused() throws IOException {
        Path target = tmp.resolve("occupied");
        Files.createDirectories(target);
        Files.writeString(target.resolve("mine.txt"), "keep me");
        CliRun r = CliRun.of("backup", healthy.toString(), "--to", target.toString());
        assertEquals(Main.USAGE, r.code(), r.toString());
        assertEquals("keep me", Files.readString(target.resolve("mine.txt")));
    }

    @Test
    void aMissingNewConfigIsNamedBeforeAnythingIsCreated() {
        Path target = tmp.resolve("no-config");
        CliRun load = CliRun.of("load", dump.toString(), "--to", target.toString(), "--new-config", "/missing");
        assertEquals(Main.USAGE, load.code(), load.toString());
        assertTrue(load.err().contains("--new-config /missing: no such file"), load.toString());
        assertFalse(Files.exists(target));
    }

    @Test
    void settingsFilesNeedNoPathOfTheirOwn() throws IOException {
        // the store's directory comes from the command line: --new-config's is NEWDIR, --config's is DIR
        // (memory for a store of a few hundred entries, not the defaults: each open below zero-fills all of it; 16 MiB
        // is the least region of 8 KiB pages)
        Path settings = Files.writeString(tmp.resolve("settings.properties"), "varve.walSyncMode=FSYNC\nvarve.pageSize=8k\n"
                + "varve.dataRegionSize=16m\nvarve.checkpointBufferSize=1m\nvarve.captureBufferSize=1m\nvarve.walSegmentSize=4m\n");
        Path target = tmp.resolve("configured");
        CliRun backup = CliRun.of("backup", healthy.toString(), "--to", target.toString(), "--new-config", settings.toString());
        assertEquals(Main.OK, backup.code(), backup.toString());
        CliRun info = CliRun.of("info", target.toString(), "--config", settings.toString());
        assertEquals(Main.OK, info.code(), info.toString());
        assertEquals(8192, StoreInspector.detectConfig(target).pageSize());
    }
}
