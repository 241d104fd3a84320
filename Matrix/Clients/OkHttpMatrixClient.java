// The OkHttp column of the client matrix: OkHttp 3.13 (Debian's libokhttp-java) as an Android app builds it, on the
// JDK's JSSE here instead of Android's Conscrypt: the default ConnectionSpecs (MODERN_TLS: TLS 1.2 and 1.3, OkHttp's
// approved suites), OkHostnameVerifier, and a trust manager holding only the built-in CA. For the targets named in
// PINS, a CertificatePinner with the pins given (the published `pinned` key and the backup), and that line's extra
// trusted roots (pin-mitm's interception root, which the device is assumed to trust): there the pin, not the trust,
// must decide.
//
// Usage: java -cp okhttp.jar:okio.jar OkHttpMatrixClient.java CA.pem TARGETS [PINS]
//   TARGETS: one ID<TAB>HOST<TAB>PORT line each; PINS: one ID<TAB>sha256/PIN,sha256/PIN[<TAB>ROOT.pem,...] line each.
// One JSON line per target on standard output. DNS names are connected at 127.0.0.1; SNI and the name check keep the
// name. One connection per target: no retries, no connection reuse between targets.
import java.io.*;
import java.net.InetAddress;
import java.nio.file.*;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.*;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.*;
import okhttp3.*;

public class OkHttpMatrixClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: java -cp okhttp.jar:okio.jar OkHttpMatrixClient.java CA.pem TARGETS [PINS]");
            System.exit(64);
        }
        Map<String, String[]> pins = new HashMap<>();
        if (args.length == 3) {
            for (String line : Files.readAllLines(Path.of(args[2]))) {
                String[] fields = line.split("\t");
                if (fields.length >= 2) pins.put(fields[0], fields);
            }
        }
        for (String line : Files.readAllLines(Path.of(args[1]))) {
            String[] fields = line.split("\t");
            if (fields.length != 3) continue;
            String id = fields[0], host = fields[1];
            int port = Integer.parseInt(fields[2]);
            boolean accepted = false;
            String detail;
            try {
                detail = fetch(client(args[0], host, pins.get(id)), host, port);
                accepted = detail.startsWith("HTTP 200");
            } catch (Exception e) {
                detail = describe(e);
            }
            System.out.println("{\"id\":" + quote(id) + ",\"accepted\":" + accepted + ",\"detail\":" + quote(detail) + "}");
            System.out.flush();
        }
    }

    static boolean isAddress(String host) {
        return host.contains(":") || host.matches("[0-9.]+");
    }

    /** A client of its own for each target, so no connection or session outlives its row. */
    static OkHttpClient client(String caFile, String host, String[] pinLine) throws Exception {
        List<String> roots = new ArrayList<>(List.of(caFile));
        if (pinLine != null && pinLine.length >= 3) roots.addAll(Arrays.asList(pinLine[2].split(",")));
        X509TrustManager trust = trustManager(roots);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {trust}, null);
        OkHttpClient.Builder builder = new OkHttpClient.Builder()
                .sslSocketFactory(context.getSocketFactory(), trust)
                .dns(name -> isAddress(name) ? Arrays.asList(InetAddress.getAllByName(name))
                                             : List.of(InetAddress.getByName("127.0.0.1")))
                .retryOnConnectionFailure(false)
                .connectTimeout(10, TimeUnit.SECONDS)
                .readTimeout(15, TimeUnit.SECONDS);
        if (pinLine != null) {
            CertificatePinner.Builder pinner = new CertificatePinner.Builder();
            for (String pin : pinLine[1].split(",")) pinner.add(host, pin);
            builder.certificatePinner(pinner.build());
        }
        return builder.build();
    }

    static X509TrustManager trustManager(List<String> files) throws Exception {
        KeyStore roots = KeyStore.getInstance(KeyStore.getDefaultType());
        roots.load(null, null);
        int index = 0;
        for (String file : files) {
            try (InputStream in = Files.newInputStream(Path.of(file))) {
                for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    roots.setCertificateEntry("ca" + index++, certificate);
                }
            }
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(roots);
        for (TrustManager manager : factory.getTrustManagers()) {
            if (manager instanceof X509TrustManager) return (X509TrustManager) manager;
        }
        throw new IllegalStateException("no X509TrustManager");
    }

    static String fetch(OkHttpClient client, String host, int port) throws IOException {
        String authority = host.contains(":") ? "[" + host + "]" : host;
        Request request = new Request.Builder().url("https://" + authority + ":" + port + "/")
                .header("Connection", "close").build();
        try (Response response = client.newCall(request).execute()) {
            String body = response.body() == null ? "" : response.body().string();
            Handshake handshake = response.handshake();
            return "HTTP " + response.code() + (handshake == null ? "" : ", " + handshake.tlsVersion().javaName())
                    + (body.isEmpty() ? ", empty body" : "");
        } finally {
            client.dispatcher().executorService().shutdown();
            client.connectionPool().evictAll();
        }
    }

    /** The exception and its causes, one line: the innermost message says what was refused. */
    static String describe(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (!text.toString().contains(String.valueOf(cause.getMessage()))) text.append(" <- ").append(cause);
        }
        return text.toString().replaceAll("\\s+", " ");
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c)); else out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
