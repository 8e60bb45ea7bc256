package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's Embedding snippet is what an embedder pastes first: it is read from README.md, compiled against the
 * engine's classes alone (what depending on varve-engine gives) and run, so it cannot drift into code that does not
 * compile or does not do what the README shows. Here, on the class path, as the cli module runs.
 */
@Timeout(120)
@Isolated("swaps System.out to read what the README's example prints")
class ReadmeEmbeddingTest {
    @TempDir
    Path dir;

    /** The first {@code ```java} block after the "Embedding" heading, its imports apart from its statements. */
    static List<String> readmeSnippet() throws IOException {
        Path root = Path.of("").toAbsolutePath();
        while (root != null && !Files.exists(root.resolve("README.md"))) root = root.getParent();
        assertNotNull(root, "README.md not found");
        String text = Files.readString(root.resolve("README.md"));
        int section = text.indexOf("\n## Embedding");
        int start = text.indexOf("```java\n", section) + "```java\n".length();
        return List.of(text.substring(start, text.indexOf("```", start)).split("\n"));
    }

    private static String codeSource(Class<?> c) throws URISyntaxException {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    @Test
    void theReadmesEmbeddingSnippetCompilesAgainstTheEngineAndRuns() throws Exception {
        List<String> lines = readmeSnippet();
        String imports = lines.stream().filter(l -> l.startsWith("import ")).collect(Collectors.joining("\n"));
        String body = lines.stream().filter(l -> !l.startsWith("import ")).collect(Collectors.joining("\n"))
                .replace("Path.of(\"/var/lib/myapp/varve\")", "Path.of(args[0])")
                // the README's region is sized for an application; the test JVM (-Xmx1g) runs it in a small one
                .replaceAll("\\.dataRegionSize\\([^)]*\\)", ".dataRegionSize(16L << 20)");
        assertTrue(body.contains("Path.of(args[0])"), "the snippet's store path moved: " + body);
        Path src = dir.resolve("src/Snippet.java");
        Files.createDirectories(src.getParent());
        Files.writeString(src, imports + "\npublic class Snippet {\npublic static void main(String[] args) throws Exception {\n"
                + body + "\n}\n}\n");

        // what depending on varve-engine puts on the class path: its own classes, config's and core's
        String classPath = Stream.of(codeSource(Varve.class), codeSource(VarveConfig.class), codeSource(StorageException.class))
                .distinct().collect(Collectors.joining(java.io.File.pathSeparator));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests need a JDK");
        Path classes = Files.createDirectories(dir.resolve("classes"));
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int rc = javac.run(null, diagnostics, diagnostics, "--release", "17", "-cp", classPath, "-d", classes.toString(), src.toString());
        assertEquals(0, rc, "README's Embedding snippet does not compile as pasted:\n" + diagnostics);

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream stdout = System.out;
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, Varve.class.getClassLoader())) {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            loader.loadClass("Snippet").getMethod("main", String[].class).invoke(null, (Object) new String[] {dir.resolve("store").toString()});
        } finally {
            System.setOut(stdout);
        }
        // the view is of the snapshot taken before alice was set to 90
        List<String> printed = new ArrayList<>(List.of(out.toString(StandardCharsets.UTF_8).strip().split("\n")));
        assertTrue(printed.contains("alice = 100"), "the snippet printed " + printed);
        assertTrue(Files.isDirectory(dir.resolve("store/wal")), "the snippet made no store");
    }
}
