package login

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
)

// credentials are what a login request's body holds. The password is never
// logged, printed or written to a response.
type credentials struct {
	Identity string `json:"identity"`
	Password string `json:"password"`
}

// bodyProblem is why a body holds no usable credentials, and the response
// it gets.
type bodyProblem struct {
	status int
	body   string
}

var (
	errBodyTooLarge    = &bodyProblem{http.StatusRequestEntityTooLarge, `{"error":"request body too large"}`}
	errBodyMediaType   = &bodyProblem{http.StatusUnsupportedMediaType, `{"error":"send application/json or application/x-www-form-urlencoded"}`}
	errBodyMalformed   = &bodyProblem{http.StatusBadRequest, `{"error":"malformed request body"}`}
	errBodyIncomplete  = &bodyProblem{http.StatusBadRequest, `{"error":"identity and password are required"}`}
	errInvalidIdentity = &bodyProblem{http.StatusBadRequest, `{"error":"invalid identity"}`}
)

// readCredentials reads at most maxBytes of r's body as JSON
// ({"identity": ..., "password": ...}) or as a form (identity=...&password=...),
// as its Content-Type says. Form fields come from the body only, never from
// the URL, where a password would end up in access logs.
func readCredentials(w http.ResponseWriter, r *http.Request, maxBytes int64) (credentials, *bodyProblem) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return credentials{}, errBodyMediaType
	}
	var c credentials
	switch mediaType {
	case "application/json":
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return credentials{}, bodyError(err)
		}
		// One object and nothing after it.
		if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
			return credentials{}, bodyError(err)
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return credentials{}, bodyError(err)
		}
		identity, password := r.PostForm["identity"], r.PostForm["password"]
		if len(identity) > 1 || len(password) > 1 {
			return credentials{}, errBodyMalformed
		}
		if len(identity) == 1 && len(password) == 1 {
			c = credentials{Identity: identity[0], Password: password[0]}
		}
	default:
		return credentials{}, errBodyMediaType
	}
	if c.Identity == "" || c.Password == "" {
		return credentials{}, errBodyIncomplete
	}
	return c, nil
}

// bodyError says which problem err, from reading or decoding a body, is.
func bodyError(err error) *bodyProblem {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errBodyTooLarge
	}
	return errBodyMalformed
}
