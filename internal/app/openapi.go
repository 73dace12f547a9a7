package app

import "io"

// PrintOpenAPI writes the OpenAPI 3.1 document of every route tandem serves (`tandem openapi`).
func PrintOpenAPI(w io.Writer) error {
	doc, err := API().Document()
	if err != nil {
		return err
	}
	_, err = w.Write(append(doc, '\n'))
	return err
}
