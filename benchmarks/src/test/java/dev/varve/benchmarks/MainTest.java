package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Fast smoke tests of the jar's entry point; no benchmark runs here. */
class MainTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    void demoWritesReopensAndVerifiesEveryKey(@TempDir Path tmp) {
        Path dir = tmp.resolve("store");
        assertEquals(Main.OK, run("--dir", dir.toString(), "--keys", "3000", "--mode", "WAL_PHYSICAL", "--sync", "BACKGROUND"), err::toString);
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("verified 3,000 keys: OK"), text);
        assertTrue(text.contains("gets") || text.contains("get "), text);
    }

    @Test
    void demoWipesItsOwnDirectoryOnTheNextRun(@TempDir Path tmp) {
        Path dir = tmp.resolve("store");
        assertEquals(Main.OK, run("--dir", dir.toString(), "--keys", "500"), err::toString);
        assertEquals(Main.OK, run("--dir", dir.toString(), "--keys", "200"), err::toString);
    }

    @Test
    void refusesToWipeADirectoryItDidNotMake(@TempDir Path tmp) throws IOException {
        Files.writeString(tmp.resolve("notes.txt"), "mine");
        assertEquals(Main.FAILED, run("--dir", tmp.toString(), "--keys", "10"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("refusing to wipe"), err::toString);
        assertTrue(Files.exists(tmp.resolve("notes.txt")));
    }

    @Test
    void badFlagsPrintUsage() {
        assertEquals(Main.USAGE, run("--keys", "many"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--keys needs a whole number"), err::toString);
        assertEquals(Main.USAGE, run("--mode", "PHYSICAL"));
        assertEquals(Main.USAGE, run("--recovery-modes", "--recovery-time"));
    }

    @Test
    void helpPrintsUsage() {
        assertEquals(Main.OK, run("--help"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--recovery-modes"));
    }
}
