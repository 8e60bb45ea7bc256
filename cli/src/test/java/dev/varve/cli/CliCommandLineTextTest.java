package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Keys reach the tool and come back out as the user wrote them: an argument that starts with '@' is the key itself,
 * never a file's content, and under a C locale non-ASCII text is printed as UTF-8 and a key the JVM could not read
 * is refused rather than looked up as another.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CliCommandLineTextTest {
    @TempDir
    Path tmp;

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private Path store(Map<String, String> entries) {
        Path dir = tmp.resolve("store");
        try (Varve s = Varve.open(SmallStore.fresh(dir).build())) {
            entries.forEach((k, v) -> s.table("t").put(utf8(k), utf8(v)));
        }
        return dir;
    }

    @Test
    void aKeyThatStartsWithAtIsTheKeyNotAFilesContent() throws Exception {
        Path file = tmp.resolve("other-key");
        Files.writeString(file, "other");
        String atKey = "@" + file; // as scan prints it; picocli would read it as "other"
        Path dir = store(Map.of(atKey, "the @ key's value", "other", "other's value"));

        CliRun get = CliRun.of("get", dir.toString(), "--table", "t", atKey);
        assertEquals(Main.OK, get.code(), get.toString());
        assertEquals("the @ key's value\n", get.out());
        CliRun scan = CliRun.of("scan", dir.toString(), "--table", "t", "--from", atKey, "--to", atKey + "\u0000");
        assertEquals(Main.OK, scan.code(), scan.toString());
        assertEquals(atKey + "\tthe @ key's value\n", scan.out());
    }

    @Test
    void underACLocaleTextIsPrintedAsUtf8AndAnUnreadableKeyIsRefused() throws Exception {
        Path dir = store(Map.of("héllo", "wörld 😀"));

        Child scan = child("scan", dir.toString(), "--table", "t");
        assertEquals(Main.OK, scan.code, scan.err);
        assertEquals("héllo\twörld 😀\n", scan.out); // not "h?llo\tw?rld ?"

        // the parent must hand "héllo" over as UTF-8 bytes for the child to receive bytes it cannot decode
        Assumptions.assumeTrue("UTF-8".equalsIgnoreCase(System.getProperty("sun.jnu.encoding")), "the test JVM's own locale is not UTF-8");
        Child get = child("get", dir.toString(), "--table", "t", "héllo");
        assertEquals(Main.USAGE, get.code, get.out + get.err); // not 3, absent: "h\uFFFD\uFFFDllo" is not the key typed
        assertTrue(get.err.contains("give the key as hex:"), get.err);
        Child hex = child("get", dir.toString(), "--table", "t", "hex:" + java.util.HexFormat.of().formatHex(utf8("héllo")));
        assertEquals(Main.OK, hex.code, hex.err);
        assertEquals("wörld 😀\n", hex.out);
    }

    private record Child(int code, String out, String err) {
    }

    /** The tool in a child JVM under the C locale, as a container or cron runs it. */
    private Child child(String... args) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(ChildJava.command(Main.class, args));
        pb.environment().keySet().removeIf(k -> k.equals("LANG") || k.startsWith("LC_"));
        pb.environment().put("LC_ALL", "C");
        Path out = Files.createTempFile(tmp, "out", ".txt");
        Path err = Files.createTempFile(tmp, "err", ".txt");
        Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child did not end");
        // read as UTF-8 strictly: bytes that are not would fail here rather than compare as U+FFFD
        return new Child(p.exitValue(), strictUtf8(out), strictUtf8(err));
    }

    private static String strictUtf8(Path f) throws Exception {
        return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(Files.readAllBytes(f))).toString();
    }
}
