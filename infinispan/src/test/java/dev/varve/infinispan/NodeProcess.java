package dev.varve.infinispan;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ClusterNode} in a child JVM: commands go to its stdin, answers come back from its stdout, its log goes to
 * {@code target/cluster-logs/NAME.log}. {@link #kill()} is a real kill -9 ({@link Process#destroyForcibly()}).
 */
final class NodeProcess implements AutoCloseable {
    private final String name;
    private final Process process;
    private final Sizing sizing;
    private final PrintWriter commands;
    private final BlockingQueue<String> answers = new ArrayBlockingQueue<>(16);

    private NodeProcess(String name, Process process, Sizing sizing) {
        this.name = name;
        this.process = process;
        this.sizing = sizing;
        this.commands = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) if (line.startsWith("@@")) answers.put(line);
            } catch (IOException | InterruptedException e) {
                // the process died: callers time out or see it dead
            }
        }, "answers-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * Free loopback ports for {@code n} nodes, below the kernel's ephemeral range: a node restarted after kill -9
     * binds its port again, and a port the kernel may hand out to an outgoing connection meanwhile (as a port from
     * {@code new ServerSocket(0)} is) can be taken by then. The port 100 above each (JGroups FD_SOCK2) must be free too.
     */
    static int[] freePorts(int n) throws IOException {
        int ephemeralLow = 32768;
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        if (Files.isReadable(range)) {
            ephemeralLow = Integer.parseInt(Files.readAllLines(range).get(0).trim().split("\\s+")[0]); // readString stops short on /proc
        }
        int[] ports = new int[n];
        int found = 0;
        Random rnd = new Random();
        for (int tries = 0; found < n && tries < 10_000; tries++) {
            int p = 10_000 + rnd.nextInt(Math.max(1, ephemeralLow - 10_200));
            if (bindable(p) && bindable(p + 100) && Arrays.stream(ports, 0, found).noneMatch(q -> Math.abs(q - p) == 100 || q == p)) {
                ports[found++] = p;
            }
        }
        if (found < n) throw new IOException("no " + n + " free loopback ports below " + ephemeralLow);
        return ports;
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return s.isBound();
        } catch (IOException e) {
            return false;
        }
    }

    /** Every value each key has in the own stores of {@code nodes}, each dumped to a file in {@code dir}. */
    static Map<String, Set<String>> storedEntries(Iterable<NodeProcess> nodes, Path dir) throws IOException, InterruptedException {
        Map<String, Set<String>> values = new HashMap<>();
        for (NodeProcess n : nodes) {
            Path f = dir.resolve(n.name + ".entries");
            n.ask("localentries " + f, 600);
            for (String line : Files.readAllLines(f)) {
                int tab = line.indexOf('\t');
                values.computeIfAbsent(line.substring(0, tab), k -> new HashSet<>()).add(line.substring(tab + 1));
            }
        }
        return values;
    }

    /**
     * How a node's JVM and store are sized. A node of the default suite lives a minute or two and spends most of its CPU
     * starting: C2's compilations and G1's threads would not pay off before the kill -9 (with them a node's start and
     * 3,000 puts took 7.9 s of CPU here, without 4.4 s), and the module's other tests run on the same two cores
     * meanwhile; its store is small. A soak's node holds hundreds of thousands of entries and lives for many minutes:
     * with C1 only and a 32 MiB data region, a node rejoining a million-key cluster took its share of the entries in at
     * about 4,000 a second and had not started after the two minutes a short node gets (the -Plong run of 2026-12-05,
     * beside the tool module's long tests); as a soak node, with C2 and a 256 MiB region, its state transfer took 64 s.
     */
    enum Sizing {
        /** 4 MiB WAL segments, the smallest: a new store writes two of zeros, and the nodes start seven times a test. */
        SHORT(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), 120, 32L << 20, 4L << 20, 4L << 20),
        /** A region that holds the node's share of a million entries. */
        SOAK(List.of("-XX:+UseSerialGC"), 900, 256L << 20, 16L << 20, 16L << 20);

        final List<String> jvmFlags;
        /** How long a start may take, state transfer included (the node's own state transfer timeout too). */
        final int startSeconds;
        final long dataRegionBytes;
        final long checkpointBufferBytes;
        final long walSegmentBytes;

        Sizing(List<String> jvmFlags, int startSeconds, long dataRegionBytes, long checkpointBufferBytes, long walSegmentBytes) {
            this.jvmFlags = jvmFlags;
            this.startSeconds = startSeconds;
            this.dataRegionBytes = dataRegionBytes;
            this.checkpointBufferBytes = checkpointBufferBytes;
            this.walSegmentBytes = walSegmentBytes;
        }
    }

    /** Starts node {@code name} with its Varve store in {@code dir}, listening on {@code port}, discovering {@code ports}. */
    static NodeProcess start(String name, Path dir, int port, int[] ports, Sizing sizing) throws IOException, InterruptedException {
        NodeProcess node = launch(name, dir, port, ports, "varve", sizing);
        try {
            node.awaitStarted();
        } catch (AssertionError | InterruptedException e) {
            node.close(); // the caller never gets the node to close: a node left running outlives the test and its directory
            throw e;
        }
        return node;
    }

    /**
     * Launches node {@code name} with its store ({@code varve} or {@code sifs}) in {@code dir} and returns at once:
     * nodes restoring a persisted topology each wait for all the others, so they must be launched together and then
     * awaited ({@link #awaitStarted()}).
     */
    static NodeProcess launch(String name, Path dir, int port, int[] ports, String store, Sizing sizing) throws IOException {
        StringBuilder hosts = new StringBuilder();
        for (int p : ports) hosts.append(hosts.length() == 0 ? "" : ",").append("127.0.0.1[").append(p).append(']');
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m"));
        cmd.addAll(sizing.jvmFlags);
        cmd.addAll(List.of("-Djava.net.preferIPv4Stack=true", "-Dvarve.test.port=" + port, "-Dvarve.test.hosts=" + hosts,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", System.getProperty("java.class.path"), ClusterNode.class.getName(), name, dir.toString(), store, sizing.name()));
        Path logs = Path.of("target", "cluster-logs");
        Files.createDirectories(logs);
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(logs.resolve(name + ".log").toFile())).start();
        return new NodeProcess(name, p, sizing);
    }

    /** Waits until the node's cache is running. */
    void awaitStarted() throws InterruptedException {
        await("started", sizing.startSeconds);
    }

    /** A clean stop: the cache manager stops, the JVM exits. */
    void stop() throws InterruptedException {
        ask("exit", 120);
        if (!process.waitFor(60, TimeUnit.SECONDS)) throw new AssertionError(name + " did not exit after a clean stop");
    }

    /** Sends a command and waits for its answer. */
    String ask(String command, long timeoutSeconds) throws InterruptedException {
        commands.println(command);
        return await(command, timeoutSeconds);
    }

    private String await(String what, long timeoutSeconds) throws InterruptedException {
        String a = answers.poll(timeoutSeconds, TimeUnit.SECONDS);
        if (a == null) throw new AssertionError(name + ": no answer to '" + what + "' within " + timeoutSeconds + " s (alive: " + process.isAlive() + ")");
        if (a.startsWith("@@ERR")) throw new AssertionError(name + ": '" + what + "' failed: " + a);
        return a.substring(3);
    }

    /** kill -9: no shutdown hook, nothing flushed by the JVM. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) throw new AssertionError(name + " survived kill -9");
    }

    String name() {
        return name;
    }

    /** Kills the node if it still runs; an interrupt while waiting for it is kept for the caller to see. */
    @Override
    public void close() {
        try {
            if (process.isAlive()) kill();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
