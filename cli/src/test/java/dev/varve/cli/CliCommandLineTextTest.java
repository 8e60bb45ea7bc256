package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Keys reach the tool as the user wrote them: an argument that starts with '@' is the key itself, never a file's
 * content.
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
        try (Varve s = Varve.open(VarveConfig.builder().path(dir).dataRegionSize(64L << 20).build())) {
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

}
