# The stack's own CA and the AMQPS listener's certificates, in .stack/tls/ (openssl).
# Sourced by scripts/stack after common.sh.
# shellcheck shell=bash

TLS_DIR="$STACK_DIR/tls"
TLS_DAYS=3650

# A CA of this .stack/ only, a server certificate for the AMQPS listener and a client certificate,
# made at the first start (again when one is missing or expires within a day). The server
# certificate names the DNS name localhost and nothing else: clients connect to
# amqps://localhost:<amqps>, and one that connects to 127.0.0.1 sees a certificate for another
# host name (tests/integration/tls_amqps.sh relies on that).
tls_valid() {
    command -v openssl >/dev/null || return 1
    local f
    for f in ca.key server.key client.key; do [ -s "$TLS_DIR/$f" ] || return 1; done
    for f in ca.pem server.pem client.pem; do
        openssl x509 -checkend 86400 -noout -in "$TLS_DIR/$f" >/dev/null 2>&1 || return 1
    done
}

tls_note() { if tls_valid; then echo ", amqps $AMQPS_PORT"; fi; }

# tls_issue NAME SUBJECT EXTENSIONS: NAME.key and NAME.pem signed by the stack's CA.
tls_issue() {
    printf '%s\n' "$3" >"$TLS_DIR/$1.ext"
    openssl req -new -newkey rsa:2048 -nodes -keyout "$TLS_DIR/$1.key" -subj "$2" \
        -out "$TLS_DIR/$1.csr" &&
        openssl x509 -req -in "$TLS_DIR/$1.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" \
            -CAcreateserial -days "$TLS_DAYS" -sha256 -extfile "$TLS_DIR/$1.ext" \
            -out "$TLS_DIR/$1.pem"
}

tls_init() {
    command -v openssl >/dev/null ||
        { say "no openssl: the AMQPS listener stays off (scripts/deps installs it)"; return 0; }
    tls_valid && return 0
    rm -rf "$TLS_DIR"
    (umask 077 && mkdir -p "$TLS_DIR")
    # Keys stay 0600 (umask); certificates are public.
    ( umask 077
      openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$TLS_DIR/ca.key" -days "$TLS_DAYS" \
          -subj "/CN=warren private stack CA $BASE $(random_hex 4)" -sha256 \
          -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
          -out "$TLS_DIR/ca.pem" &&
      tls_issue server /CN=localhost \
          $'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE' &&
      tls_issue client /CN=warren-stack-client \
          $'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE' ) >"$STACK_DIR/openssl.log" 2>&1 ||
        { show_log "$STACK_DIR/openssl.log"; die "openssl could not make the stack's certificates"; }
    rm -f "$TLS_DIR"/*.csr "$TLS_DIR"/*.ext "$TLS_DIR"/*.srl "$STACK_DIR/openssl.log"
    chmod 644 "$TLS_DIR"/*.pem
    say "made a CA and certificates for AMQPS in $TLS_DIR"
}
